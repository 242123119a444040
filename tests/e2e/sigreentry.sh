#!/bin/bash
# Signal handlers that allocate and free on the thread the profiler is
# working on (issue 9): testdata/sigfork (a SIGCHLD handler during fork())
# and testdata/sigrealloc (a profiling timer during realloc) must finish
# under `record`, sampled (nearly every block tracked) and with --all, with
# their native output and status. A hang is a failure after a timeout.
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD.
. "$(dirname "$0")/../lib.sh"
tmp=$work
limit=60

for name in sigfork sigrealloc; do
	prog=$TESTDATA_BUILD/$name
	timeout -k 5 $limit "$prog" >"$tmp/$name.native" 2>&1
	st_native=$?
	[ "$st_native" = 0 ] || { fail "$name: natively exited $st_native"; continue; }
	for opt in "--rate 16" --all; do
		timeout -k 5 $limit "$ALLOCPROF" record -q --no-children $opt -o "$tmp/$name.trace" -- "$prog" \
			>"$tmp/$name.out" 2>&1
		st=$?
		if [ "$st" = 124 ] || [ "$st" = 137 ]; then
			fail "$name $opt: still running after ${limit}s (deadlock)"
			continue
		fi
		[ "$st" = "$st_native" ] || fail "$name $opt: exit status $st, natively $st_native"
		cmp -s "$tmp/$name.native" "$tmp/$name.out" || fail "$name $opt: output differs: $(head -c 200 "$tmp/$name.out")"
		"$ALLOCPROF" stats "$tmp/$name.trace" >/dev/null || fail "$name $opt: stats failed"
		echo "$name $opt: finished, status $st"
	done
done
exit $failed
