#!/bin/bash
# Frames without symbols are exported for pprof to symbolize later: a
# trace recorded with --no-symbols (one that keeps them names every frame
# whatever the files: tests/symbolize/kept.py) from a binary that was
# rebuilt before the export (its
# build-id differs, allocprof shows its frames as addresses) is exported
# with that binary's mapping unsymbolized (no has_functions, locations
# without lines, the executable segment as /proc/PID/maps has it); once
# the original binary is back at the recorded path,
# `go tool pprof -symbolize=local` names those locations as allocprof
# does with the original binary.
# usage: symbolize-local.sh ALLOCPROF SRCDIR DEMO DEMO_REBUILT
set -u
ap=$1 src=$2 demo=$3 rebuilt=$4
if ! command -v go >/dev/null 2>&1; then
	echo "SKIP: go not found (install golang-go to compare with go tool pprof)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE="$tmp/gocache" HOME="$tmp" GOFLAGS= LC_ALL=C ALLOCPROF_NO_PROGRESS=1
fail=0
prog=$tmp/prog

cp "$demo" "$prog"
"$ap" record --all --no-symbols -o "$tmp/t.trace" -- "$prog" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
"$ap" export -o "$tmp/good.pb.gz" "$tmp/t.trace" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }

cp "$rebuilt" "$prog"
"$ap" export -o "$tmp/rebuilt.pb.gz" "$tmp/t.trace" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
grep -q "$prog: build-id differs" "$tmp/err" || { echo "FAIL: no build-id warning"; cat "$tmp/err"; fail=1; }
go tool pprof -raw -symbolize=none "$tmp/rebuilt.pb.gz" >"$tmp/raw-rebuilt" 2>&1 || fail=1
# the mapping without [FN][FL][LN][IN], the others with
if ! grep -Eq "^1: 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ $prog [0-9a-f]+ *$" "$tmp/raw-rebuilt"; then
	echo "FAIL: $prog is not an unsymbolized mapping:"
	sed -n '/^Mappings/,$p' "$tmp/raw-rebuilt"
	fail=1
fi
grep -q 'libc.so.6 [0-9a-f]* \[FN\]\[FL\]\[LN\]\[IN\]' "$tmp/raw-rebuilt" ||
	{ echo "FAIL: libc's mapping lost its symbols"; fail=1; }
grep -q "prog+0x" "$tmp/raw-rebuilt" && { echo "FAIL: an address frozen in as a name"; fail=1; }

cp "$demo" "$prog"
go tool pprof -raw -symbolize=none "$tmp/good.pb.gz" >"$tmp/raw-good" 2>&1 || fail=1
go tool pprof -raw -symbolize=local "$tmp/rebuilt.pb.gz" >"$tmp/raw-local" 2>&1 || fail=1
python3 "$src/compare.py" relocal "$tmp/raw-local" "$tmp/raw-good" "$prog" || fail=1
go tool pprof -top -symbolize=local "$tmp/rebuilt.pb.gz" >"$tmp/top" 2>&1 || fail=1
grep -q '  100%  main$' "$tmp/top" || { echo "FAIL: pprof -top after -symbolize=local:"; cat "$tmp/top"; fail=1; }
exit $fail
