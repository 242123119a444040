#!/bin/sh
# advise's text output on the synthetic trace of `test-advise --write`
# (numbers by construction, see write_trace there): a pool that costs more
# than it saves reads as a cost, counts of one are singular, and a trace
# without cycles says so instead of "one every <its duration>".
# usage: text.sh TEST_ADVISE ALLOCPROF   (ALLOCPROF_TEST_COSTS set)
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$1" --write "$tmp/t.trace"
"$2" advise --no-measure -n 1 "$tmp/t.trace" >"$tmp/out"
fail=0
expect() {
	if ! grep -qxF -- "$1" "$tmp/out"; then
		echo "missing line: $1"
		fail=1
	fi
}
expect "Cycles: gogc:100, 0 in the trace (none in its 1ms); 1 P, one thread: replayed on one"
expect "   avoided: 999 allocations, 23.41kB; pooling would cost ~6.01us more (cost model)"
expect "(1 more site; -n 0 shows all)"
if grep -q -- "-[0-9]" "$tmp/out"; then
	echo "a negative number:"
	grep -- "-[0-9]" "$tmp/out"
	fail=1
fi
[ $fail = 0 ] || { echo "--- output:"; cat "$tmp/out"; }
exit $fail
