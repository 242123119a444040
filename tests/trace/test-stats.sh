#!/bin/bash
# `allocprof stats` on traces made by the test writer (tests/trace/mktrace.c
# says what each holds, so the values are fixed by construction): golden text
# and JSON, sampled weights checked against the formula, one error line and
# exit 1 for each class of bad input, a warning and exit 0 for truncated
# traces, -h.
# usage: test-stats.sh ALLOCPROF MKTRACE SRCDIR
set -u
AP=$(realpath "$1")
MK=$(realpath "$2")
SRC=$(realpath "$3")
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

bad() {
	echo "FAIL: $*"
	fail=1
}

# expect NAME RC ARGS...: runs stats, compares stdout with expected/NAME.out
# and stderr with expected/NAME.err (empty when that file is absent).
expect() {
	local name=$1 rc=$2
	shift 2
	(cd "$T" && "$AP" stats "$@" >"$name.out" 2>"$name.err")
	local got=$?
	[ "$got" = "$rc" ] || bad "$name: exit $got, expected $rc"
	diff -u "$SRC/expected/$name.out" "$T/$name.out" || bad "$name: stdout differs"
	if [ -f "$SRC/expected/$name.err" ]; then
		diff -u "$SRC/expected/$name.err" "$T/$name.err" || bad "$name: stderr differs"
	else
		[ -s "$T/$name.err" ] && { bad "$name: unexpected stderr:"; cat "$T/$name.err"; }
	fi
}

# expect_err NAME LINE ARGS...: exit 1, nothing on stdout, exactly LINE on stderr.
expect_err() {
	local name=$1 line=$2
	shift 2
	(cd "$T" && "$AP" stats "$@" >"$name.out" 2>"$name.err")
	local got=$?
	[ "$got" = 1 ] || bad "$name: exit $got, expected 1"
	[ -s "$T/$name.out" ] && bad "$name: stdout not empty"
	printf '%s\n' "$line" | diff -u - "$T/$name.err" || bad "$name: stderr differs"
}

for n in exact exact-noend exact-cut sampled; do
	"$MK" "$n" "$T/$n.trace" || bad "mktrace $n"
done

expect exact 0 exact.trace
expect exact-json 0 --json exact.trace
expect exact-noend 0 exact-noend.trace
expect exact-noend-json 0 --json exact-noend.trace
expect exact-cut 0 exact-cut.trace
expect sampled 0 sampled.trace
expect sampled-json 0 --json sampled.trace

# The sampled estimates against the format doc's weight formula, computed
# here independently of the C code.
python3 - "$T/sampled-json.out" <<'EOF' || bad "sampled weights"
import json, math, sys
j = json.load(open(sys.argv[1]))
R = 524288
w = lambda s: 1 / (1 - math.exp(-(s + 1) / R))
big, small = w(1048576), w(100)
want = {
    "alloc_objects": 2 * big + small,
    "alloc_space": 2 * big * 1048576 + small * 100,
    "free_objects": big,
    "inuse_objects": big + small,
    "inuse_space": big * 1048576 + small * 100,
    "peak_inuse_space": 2 * big * 1048576,
}
ok = True
for k, v in want.items():
    if abs(j[k] - v) > 0.5:
        print(f"{k}: {j[k]}, expected {v:.3f}")
        ok = False
if j["exact"] or j["rate"] != R or j["samples"] != 3 or j["events"] != 4:
    print("exact/rate/samples/events:", j["exact"], j["rate"], j["samples"], j["events"])
    ok = False
sys.exit(0 if ok else 1)
EOF

# docs/json.md documents every key `stats --json` prints, in that order.
python3 - "$T/exact-json.out" "$T/exact-noend-json.out" "$SRC/../../docs/json.md" <<'EOF' || bad "stats --json keys vs docs/json.md"
import json, re, sys
doc = open(sys.argv[3]).read()
sec = doc.split("## `allocprof stats --json TRACE`", 1)
if len(sec) < 2:
    print("docs/json.md has no stats section")
    sys.exit(1)
sec = sec[1].split("\n## ", 1)[0]
documented = []
for row in re.findall(r"^\| (`[^|]*`) \|", sec, re.M):
    documented += re.findall(r"`([a-z_]+)`", row)
ok = True
for path in sys.argv[1:3]:
    keys = list(json.load(open(path)).keys())
    if keys != documented:
        print(f"{path}: keys {keys}\n  documented {documented}")
        ok = False
sys.exit(0 if ok else 1)
EOF

# Bad inputs: one line, exit 1.
expect_err missing "allocprof: nothere.trace: No such file or directory" nothere.trace
mkdir "$T/dir.trace"
expect_err directory "allocprof: dir.trace: Is a directory" dir.trace
: >"$T/empty.trace"
expect_err empty "allocprof: empty.trace: not an allocprof trace" empty.trace
echo "this is not a trace at all" >"$T/text.trace"
expect_err text "allocprof: text.trace: not an allocprof trace" text.trace
# version 1 (byte 8: the format before time quanta), then a big-endian
# byte-order mark (bytes 12..15)
cp "$T/exact.trace" "$T/v1.trace"
printf '\x01' | dd of="$T/v1.trace" bs=1 seek=8 conv=notrunc status=none
expect_err version "allocprof: v1.trace: trace format version 1, this allocprof reads 10: recorded by an older allocprof (record it again)" v1.trace
# version 9, the one before: refused all the same (one version is read)
cp "$T/exact.trace" "$T/v9.trace"
printf '\x09' | dd of="$T/v9.trace" bs=1 seek=8 conv=notrunc status=none
expect_err v9 "allocprof: v9.trace: trace format version 9, this allocprof reads 10: recorded by an older allocprof (record it again)" v9.trace
cp "$T/exact.trace" "$T/bom.trace"
printf '\x01\x02\x03\x04' | dd of="$T/bom.trace" bs=1 seek=12 conv=notrunc status=none
expect_err bom "allocprof: bom.trace: wrong byte-order mark 0x04030201 (expected 0x01020304): written on a machine of another byte order, or damaged" bom.trace
# more CPUs allowed than an event can name (HEADER allowed_cpus)
"$MK" damaged-allowed "$T/allowed.trace" || bad "mktrace damaged-allowed"
expect_err allowed "allocprof: allowed.trace: corrupt chunk at byte 16: the header's allowed CPU count 4294967296 is more than 65536" allowed.trace
# a flipped byte in the HEADER payload (byte 16 + 32 + 1)
cp "$T/exact.trace" "$T/crc.trace"
printf '\xee' | dd of="$T/crc.trace" bs=1 seek=49 conv=notrunc status=none
expect_err crc "allocprof: crc.trace: corrupt chunk at byte 16: payload checksum mismatch" crc.trace
# counts that say one record more than the chunk holds: found by the
# first pass over the events, and said before anything is printed, by
# every command
"$MK" damaged-counts "$T/counts.trace" || bad "mktrace damaged-counts"
msg_counts=$(cd "$T" && "$AP" stats counts.trace 2>&1 >/dev/null)
case $msg_counts in
"allocprof: counts.trace: corrupt chunk at byte "*": its counts say "*" records, "*) ;;
*) bad "counts: $msg_counts" ;;
esac
expect_err counts "$msg_counts" counts.trace
expect_err counts-json "$msg_counts" --json counts.trace
# (advise with the advisor tests' cost table: not measured here, which
# says so on stderr). The error comes back from the pass that finds it
# (no exit inside the reader): every command, a whole run of two traces
# (stats A B) and diff (its own exit status for "cannot compare", 2)
# say it and stop; export and flamegraph write no file.
for cmd in top tree advise "list main" "peek main" timeline "tui --batch" "export -o x.pb.gz" \
	flamegraph "flamegraph -o x.svg" "stats exact.trace" "diff exact.trace" "diff --fail-above peak=+10% exact.trace"; do
	want=1
	case $cmd in diff*) want=2 ;; esac
	(cd "$T" && ALLOCPROF_TEST_COSTS="$SRC/../advise/costs.json" "$AP" $cmd counts.trace \
		>counts.out 2>counts.err)
	got=$?
	[ "$got" = "$want" ] || bad "counts: $cmd: exit $got, expected $want"
	[ -s "$T/counts.out" ] && bad "counts: $cmd: stdout not empty"
	printf '%s\n' "$msg_counts" | diff -u - "$T/counts.err" || bad "counts: $cmd: stderr differs"
done
# the damaged one as diff's base
(cd "$T" && "$AP" diff counts.trace exact.trace >counts.out 2>counts.err)
got=$?
[ "$got" = 2 ] || bad "counts: diff as the base: exit $got, expected 2"
[ -s "$T/counts.out" ] && bad "counts: diff as the base: stdout not empty"
printf '%s\n' "$msg_counts" | diff -u - "$T/counts.err" || bad "counts: diff as the base: stderr differs"
for f in x.pb.gz x.svg; do
	[ -e "$T/$f" ] && bad "counts: $f written"
done
# only the preamble: cut before the header
head -c 16 "$T/exact.trace" >"$T/nohdr.trace"
expect_err noheader "allocprof: nohdr.trace: no header chunk: the trace is empty or was cut before its header" nohdr.trace

# Cuts of a trace (every byte of the first 48, then every 11th: the library
# test covers every byte) and random overwritten bytes: stats exits 0 (a
# truncated prefix, with one warning line) or 1 (one error line), never
# anything else.
check_one() {
	"$AP" stats "$1" >"$T/v.out" 2>"$T/v.err"
	local rc=$? lines
	lines=$(wc -l <"$T/v.err")
	case $rc in
	0) [ "$lines" -le 1 ] || bad "$2: exit 0 with $lines stderr lines" ;;
	1) [ "$lines" = 1 ] && [ ! -s "$T/v.out" ] || bad "$2: exit 1 with $lines stderr lines or stdout" ;;
	*) bad "$2: exit $rc"; cat "$T/v.err" ;;
	esac
	grep -qv '^allocprof: ' "$T/v.err" && bad "$2: stderr: $(cat "$T/v.err")"
}
size=$(stat -c %s "$T/exact.trace")
for ((cut = 0; cut < size; cut += (cut < 48 ? 1 : 11))); do
	head -c "$cut" "$T/exact.trace" >"$T/cut.trace"
	check_one "$T/cut.trace" "cut at $cut"
done
RANDOM=42
for ((i = 0; i < 25; i++)); do
	cp "$T/exact.trace" "$T/rnd.trace"
	printf "\\x$(printf %02x $((RANDOM % 256)))" |
		dd of="$T/rnd.trace" bs=1 seek=$((RANDOM % size)) conv=notrunc status=none
	check_one "$T/rnd.trace" "random byte variant $i"
done

# Usage errors: exit 2.
"$AP" stats >/dev/null 2>"$T/usage.err"
[ $? = 2 ] || bad "stats without a trace: exit not 2"
grep -q "^allocprof: stats: no trace file given (see 'allocprof stats -h')$" "$T/usage.err" || bad "usage message: $(cat "$T/usage.err")"
"$AP" stats --bogus "$T/exact.trace" >/dev/null 2>"$T/usage2.err"
[ $? = 2 ] || bad "stats --bogus: exit not 2"
grep -q "unknown option '--bogus'" "$T/usage2.err" || bad "bogus option message: $(cat "$T/usage2.err")"
# Two traces are read as one run: their totals add up, each is a process.
cp "$T/exact.trace" "$T/exact2.trace"
one=$("$AP" stats --json "$T/exact.trace" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["alloc_objects"], d["alloc_space"], d["inuse_space"], len(d.get("processes", [])))')
two=$("$AP" stats --json "$T/exact.trace" "$T/exact2.trace" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["alloc_objects"], d["alloc_space"], d["inuse_space"], len(d["processes"]))')
read -r a b c n <<<"$one"
[ "$two" = "$((2 * a)) $((2 * b)) $((2 * c)) 2" ] || bad "two traces: '$two', one is '$one'"
[ "$n" = 0 ] || bad "one trace has a process list: '$one'"

# -h / --help: to stdout, exit 0.
for h in -h --help; do
	out=$("$AP" stats $h) || bad "stats $h: exit $?"
	case $out in "usage: allocprof stats [--json] [--no-children|--by-process] TRACE..."*) ;; *) bad "stats $h: $out" ;; esac
done

[ $fail = 0 ] && echo "stats: all checks passed"
exit $fail
