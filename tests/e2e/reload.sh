#!/bin/bash
# A plugin unloaded and another loaded at its address (testdata/
# reload_main: libreloada.so, then libreloadb.so where it was, then
# libreloada.so again): the sampler writes the module found where an
# unloaded one was, and interns the stacks after it anew; the reader
# resolves each stack with the modules written before it. top --lines
# must give libreloadb.so's 300 blocks to its SITE line in reload_b.c,
# and libreloada.so's 200 (100 a load) to reload_a.c's; once, all 500
# went to reload_a.c (the loader's second library read as the first).
# Skips where the loader did not reuse the address (the program says).
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD,
# TESTDATA_SRC.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prog=$TESTDATA_BUILD/reload_main
a=$TESTDATA_BUILD/libreloada.so
b=$TESTDATA_BUILD/libreloadb.so
native=$("$prog" "$a" "$b") || { echo "FAIL: reload_main: exit $?"; exit 1; }
case $native in
*"bases same"*) ;;
*) echo "SKIP: the loader mapped the libraries at different bases: $native"; exit 77 ;;
esac
if ! "$ALLOCPROF" record --all -q -o "$tmp/t" "$prog" "$a" "$b" >"$tmp/out" 2>"$tmp/err"; then
	echo "FAIL: record:"; cat "$tmp/err"; exit 1
fi
[ "$(cat "$tmp/out")" = "$native" ] || { echo "FAIL: the output under record: $(cat "$tmp/out")"; exit 1; }
"$ALLOCPROF" top --lines --alloc_objects "$tmp/t" >"$tmp/top" 2>"$tmp/top.err" ||
	{ echo "FAIL: top:"; cat "$tmp/top.err"; exit 1; }
la=$(grep -n 'SITE:reload_a' "$TESTDATA_SRC/reload_a.c" | cut -d: -f1)
lb=$(grep -n 'SITE:reload_b' "$TESTDATA_SRC/reload_b.c" | cut -d: -f1)
fail=0
grep -Eq "^ +300 .* b_blocks .*/reload_b\.c:$lb\$" "$tmp/top" ||
	{ echo "FAIL: libreloadb.so's 300 blocks are not at reload_b.c:$lb"; fail=1; }
grep -Eq "^ +200 .* reload_work .*/reload_a\.c:$la\$" "$tmp/top" ||
	{ echo "FAIL: libreloada.so's 200 blocks are not at reload_a.c:$la"; fail=1; }
if [ $fail = 1 ]; then
	cat "$tmp/top"
	exit 1
fi
echo "ok: 300 blocks at reload_b.c:$lb, 200 at reload_a.c:$la (one base)"
