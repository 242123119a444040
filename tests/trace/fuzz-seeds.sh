#!/bin/sh
# The seed corpus of the reader's fuzz target (fuzz-reader.c), into OUT:
# mktrace's synthetic traces and, given ALLOCPROF and the built testdata
# directory, traces of a few testdata programs recorded with --all (handoff
# among them: other threads' blocks freed); each
# as it is, compacted, and compacted with its chunks stored plain
# (fuzz-driver --seed).
# usage: fuzz-seeds.sh FUZZ_DRIVER MKTRACE OUT [ALLOCPROF TESTDATA_DIR]
set -eu
driver=$1 mktrace=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in exact exact-noend exact-cut sampled; do
	"$mktrace" $n "$tmp/$n.trace"
done
"$mktrace" big "$tmp/big.trace" 3000
if [ $# -ge 5 ]; then
	for p in single threads aligned cxx realloc_chain; do
		rc=0
		ALLOCPROF_COMPACT_LEVEL=0 "$4" record -q --all -o "$tmp/$p.trace" "$5/$p" >/dev/null ||
			rc=$?
		# (realloc_chain exits 3 on purpose)
		[ $rc -eq 0 ] || { [ $p = realloc_chain ] && [ $rc -eq 3 ]; }
	done
	# threads passing blocks (200 rounds): FREEs of other threads' blocks,
	# resolved in the compacted trace
	ALLOCPROF_COMPACT_LEVEL=0 "$4" record -q --all -o "$tmp/handoff.trace" "$5/handoff" 200 \
		>/dev/null
fi
mkdir -p "$out"
"$driver" --seed "$out" "$tmp"/*.trace
