#!/bin/sh
# `allocprof export` as a user meets it: -h, where each format goes by
# default and with -o, what each writes, and one clear line with the right
# exit status for each kind of bad input (1 failure, 2 usage).
# usage: cli.sh ALLOCPROF MKTRACE
set -u
ap=$1 mktrace=$2
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fail=0
"$mktrace" "$tmp/fx.trace" || exit 1

# expect STATUS STDERR_PATTERN ARGS...: exit status STATUS, and stderr is
# one line matching the grep -E pattern (empty pattern: stderr empty).
expect() {
	want=$1 pat=$2
	shift 2
	"$ap" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$got" != "$want" ]; then
		echo "FAIL allocprof $*: exit $got, expected $want"; cat "$tmp/err"; fail=1
	elif [ -z "$pat" ] && [ -s "$tmp/err" ]; then
		echo "FAIL allocprof $*: unexpected stderr:"; cat "$tmp/err"; fail=1
	elif [ -n "$pat" ] && { [ "$lines" != 1 ] || ! grep -Eq "$pat" "$tmp/err"; }; then
		echo "FAIL allocprof $*: stderr is not one line matching '$pat':"; cat "$tmp/err"; fail=1
	fi
}
check() { # check DESCRIPTION COMMAND...: COMMAND must succeed
	what=$1
	shift
	"$@" || { echo "FAIL $what"; fail=1; }
}

expect 0 '' export -h
check "export -h: usage line" grep -q '^usage: allocprof export \[--format=pprof|folded|json\]' "$tmp/out"
for opt in --format --output --sample-index --drop-frames --debug-dir; do
	check "export -h: $opt" grep -q -- "$opt" "$tmp/out"
done
expect 0 '' help export
check "help export" grep -q '^usage: allocprof export' "$tmp/out"
"$ap" --help | grep -q '^  export ' || { echo "FAIL allocprof --help does not list export"; fail=1; }

# pprof: TRACE.pb.gz by default, one line on stderr, a gzip file
expect 0 "^allocprof: wrote $tmp/fx.trace.pb.gz \(8 samples, 17 locations, 9 functions, 1 mappings\)$" \
	export "$tmp/fx.trace"
check "default output is gzip" sh -c "gzip -t '$tmp/fx.trace.pb.gz'"
check "nothing on stdout" test ! -s "$tmp/out"
# -o - writes to stdout (not a terminal here), quietly
expect 0 '' export -o - "$tmp/fx.trace"
check "pprof on stdout is the same profile" cmp -s "$tmp/out" "$tmp/fx.trace.pb.gz"
expect 0 "^allocprof: wrote $tmp/p\.pb\.gz " export --format pprof --output "$tmp/p.pb.gz" "$tmp/fx.trace"
check "--sample-index changes only default_sample_type" sh -c \
	"'$ap' export --sample-index inuse_objects -o - '$tmp/fx.trace' | gzip -dc | grep -q inuse_objects"

# folded and json: stdout by default; -o writes a file
expect 0 '' export --format=folded "$tmp/fx.trace"
check "folded: 7 lines" test "$(wc -l <"$tmp/out")" = 7
check "folded: alloc_space by default" grep -qx 'fx_build;alloc_big 20480' "$tmp/out"
expect 0 '' export --format=folded --sample-index=alloc_objects --drop-frames wrap_alloc "$tmp/fx.trace"
check "folded --drop-frames" grep -qx 'fx_build;use_wrapper 4' "$tmp/out"
expect 0 "^allocprof: wrote $tmp/f\.txt \(7 stacks\)$" export --format=folded -o "$tmp/f.txt" "$tmp/fx.trace"
"$ap" stats --json "$tmp/fx.trace" >"$tmp/stats.json"
expect 0 '' export --format=json "$tmp/fx.trace"
check "json: keys and values" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
peak = json.load(open(sys.argv[2]))["peak_inuse_space"]
assert list(d) == ["program", "rate", "sample_types", "totals", "stacks"], list(d)
t = dict(d["totals"])
assert t.pop("peak_space") == peak, (d["totals"], peak)
assert t.pop("peak_objects") > 0, d["totals"]
assert t.pop("temporary") == json.load(open(sys.argv[2]))["temporary"], d["totals"]
assert t == {"alloc_objects": 159, "alloc_space": 26300,
             "inuse_objects": 23, "inuse_space": 21936}, d["totals"]
keys = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space", "peak_objects", "peak_space",
        "temporary"]
assert [t["type"] for t in d["sample_types"]] == keys
assert len(d["stacks"]) == 8
for key in keys:
    assert sum(s[key] for s in d["stacks"]) == d["totals"][key], key
f = d["stacks"][0]["frames"]
assert [x["function"] for x in f] == ["alloc_big", "fx_build"], f
assert set(f[0]) == {"function", "file", "line", "inlined", "module"}, f[0]
' "$tmp/out" "$tmp/stats.json"

# usage errors: exit 2
expect 2 "^allocprof: export: unknown format 'svg', not pprof, folded or json \(see 'allocprof export -h'\)$" \
	export --format=svg "$tmp/fx.trace"
expect 2 "^allocprof: export: unknown sample index 'objects'" export --sample-index objects "$tmp/fx.trace"
expect 2 "^allocprof: export: unknown option '--jsonl'" export --jsonl "$tmp/fx.trace"
expect 2 "^allocprof: export: option '-o' needs a value" export "$tmp/fx.trace" -o
expect 2 "^allocprof: export: no trace given" export
expect 2 "^allocprof: export: --by-process: " export --by-process "$tmp/fx.trace"

# failures: exit 1, one line
expect 1 "^allocprof: $tmp/missing.trace: " export "$tmp/missing.trace"
printf 'not a trace at all' >"$tmp/junk"
expect 1 "^allocprof: $tmp/junk: " export --format=folded "$tmp/junk"
expect 2 "^allocprof: export: --drop-frames: bad regex '\(': " export --drop-frames '(' "$tmp/fx.trace"
expect 1 "^allocprof: $tmp/nodir/x.pb.gz: No such file or directory$" export -o "$tmp/nodir/x.pb.gz" "$tmp/fx.trace"
mkdir "$tmp/ro"
chmod a-w "$tmp/ro"
if [ ! -w "$tmp/ro" ]; then	# root writes anywhere
	expect 1 "^allocprof: $tmp/ro/x.json: Permission denied$" export --format=json -o "$tmp/ro/x.json" "$tmp/fx.trace"
fi
check "no temporary file left behind" sh -c "! ls '$tmp' '$tmp/ro' | grep -q '\.tmp'"
# -o names what is there: a FIFO (-o >(gzip)) and a device are written
# as they are, never replaced by a file (-o /dev/null, run as root, left
# /dev/null a file); a symbolic link stays, and leads to the new file
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
expect 0 "^allocprof: wrote $tmp/fifo \(7 stacks\)$" export --format=folded -o "$tmp/fifo" "$tmp/fx.trace"
check "a FIFO stays a FIFO" test -p "$tmp/fifo"
wait $reader
check "the FIFO's reader got the stacks" test "$(wc -l <"$tmp/fifo.out")" = 7
if mknod "$tmp/null" c 1 3 2>/dev/null; then # (root)
	expect 0 "^allocprof: wrote $tmp/null " export -o "$tmp/null" "$tmp/fx.trace"
	check "a device stays a device" test -c "$tmp/null"
fi
: >"$tmp/target.txt"
ln -s target.txt "$tmp/link.txt"
expect 0 "^allocprof: wrote $tmp/link.txt \(7 stacks\)$" export --format=folded -o "$tmp/link.txt" "$tmp/fx.trace"
check "a symbolic link stays" test -L "$tmp/link.txt"
check "the link's target is written" test "$(wc -l <"$tmp/target.txt")" = 7
# a failed export leaves an existing output alone
cp "$tmp/fx.trace.pb.gz" "$tmp/keep.pb.gz"
expect 1 "^allocprof: " export -o "$tmp/keep.pb.gz" "$tmp/junk"
check "existing output kept" cmp -s "$tmp/keep.pb.gz" "$tmp/fx.trace.pb.gz"
exit $fail
