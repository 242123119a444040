# bench/alloc_heavy.py: an allocation-heavy Python workload for bench/run.sh.
# Builds and discards dicts, lists and strings large enough (> 512 bytes)
# that CPython takes them from malloc rather than from its small-object
# allocator. Usage: python3 alloc_heavy.py ROUNDS
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
total = 0
keep = []
for r in range(rounds):
    row = {"k%d" % i: i * r for i in range(48)}
    items = [str(r + i) for i in range(80)]
    text = "-".join(items)
    words = text.split("-")
    grid = [[r, i] * 40 for i in range(4)]
    total += len(row) + len(words) + len(text) + sum(len(g) for g in grid)
    keep.append(text)
    if len(keep) > 256:
        keep = keep[128:]
print("alloc_heavy:", rounds, "rounds,", total)
