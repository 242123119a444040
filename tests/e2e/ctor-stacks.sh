#!/bin/bash
# The stacks of allocations a linked library's constructor makes before
# the sampler starts (review27): testdata/ctor_main links libctoralloc.so,
# whose constructor allocates through ctor_fill and ctor_make (not
# inlined). record --all gives each allocation the stack valgrind's DHAT
# gives it, frame for frame up to the loader's unnamed entry (and main's
# own up to main), with the same counts: not the caller alone.
# VALGRIND, else the valgrind in PATH (none: skip).
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}
need_valgrind
prog=$TESTDATA_BUILD/ctor_main
"$VALGRIND" --tool=dhat --dhat-out-file="$tmp/dhat.json" "$prog" >/dev/null 2>"$tmp/vg.err" ||
	{ fail "dhat: $(tail -3 "$tmp/vg.err")"; exit 1; }
"$ALLOCPROF" record -q --all -o "$tmp/c.trace" -- "$prog" >/dev/null || fail "record"
"$ALLOCPROF" export --format=folded --alloc_objects -o "$tmp/c.folded" "$tmp/c.trace" 2>/dev/null ||
	fail "export --format=folded"
"$py" - "$tmp" <<'PY' || fail "the constructor's stacks differ from valgrind's"
import collections, json, re, sys
d = sys.argv[1]
# valgrind's: each program point's frames, innermost first, the allocator
# left out; a frame without a name (the loader's entry) ends the stack
dh = json.load(open(d + "/dhat.json"))
want = collections.Counter()
for pp in dh["pps"]:
    names = []
    for f in pp["fs"][1:]:
        m = re.match(r"0x[0-9A-F]+: (\S+) ", dh["ftbl"][f])
        if not m or m.group(1) == "???":
            break
        names.append(m.group(1))
    want[tuple(names)] += pp["tbk"]
# ours: the folded stacks, outermost first: from the loader's entry
# (ld.so's _dl_start_user, an assembly label that valgrind leaves
# unnamed and addr2line names; module+0xoff without it) or main in
got = collections.Counter()
for line in open(d + "/c.folded"):
    stack, n = line.rsplit(" ", 1)
    frames = stack.split(";")
    if "main" in frames:
        frames = frames[frames.index("main"):]
    frames = [f for f in frames
              if not re.match(r".*\+0x[0-9a-f]+$", f) and f != "_dl_start_user"]
    got[tuple(reversed(frames))] += int(n)
for k in sorted(set(want) | set(got)):
    print("%6s %6s  %s" % (want.get(k, 0), got.get(k, 0), " <- ".join(k)))
deep = ("ctor_make", "ctor_fill", "ctor_init")
assert any(k[:3] == deep and v == 1800 for k, v in got.items()), "no ctor_make <- ctor_fill <- ctor_init"
assert got == want, "differ"
PY
exit $failed
