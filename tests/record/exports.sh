#!/bin/bash
# What the sampler's split by concern keeps (sampler/README.md, "Source
# files"): liballocprof.so defines exactly the names sampler.map exports,
# and malloc and free, the fast paths of interpose.c, make no call (each
# ends in a jump to glibc's function or to its slow path) but glibc's
# malloc (malloc reads the block's size after it, for the live-byte
# counter) and the counter's rare fold (live_fold); and sig_entry, the
# handler under the fatal signals, reaches the program's own handler by a
# jump, not a call: none of its frames stays on the stack while that
# handler runs (record -p detaches meanwhile: nothing of ours is left on
# any thread's stack).
# Usage: exports.sh LIBALLOCPROF_SO SAMPLER_MAP
set -u
so=$1 map=$2
fail=0
want=$(sed -n '/global:/,/local:/p' "$map" | sed -e '1d;$d' -e 's|/\*.*\*/||g' |
	tr ' ;\t' '\n\n\n' | grep . | sort)
have=$(nm -D --defined-only "$so" | awk '{ print $3 }' | sort)
if [ -z "$want" ] || [ "$want" != "$have" ]; then
	echo "FAIL: the library's exports are not sampler.map's (< map, > library):"
	diff <(echo "$want") <(echo "$have")
	fail=1
fi
for f in malloc free; do
	body=$(objdump -d --no-show-raw-insn "$so" |
		awk -v f="<$f>:" '$2 == f { on = 1; next } on && /^$/ { exit } on')
	if [ -z "$body" ]; then
		echo "FAIL: no $f in $so"
		fail=1
	elif grep 'call' <<<"$body" | grep -v '<live_fold>' |
		{ [ $f = malloc ] && grep -v '<real_malloc>' || cat; } | grep -q .; then
		echo "FAIL: $f makes a call:"
		echo "$body"
		fail=1
	fi
done
body=$(objdump -d --no-show-raw-insn "$so" |
	awk '$2 == "<sig_entry>:" { on = 1; next } on && /^$/ { exit } on')
if [ -z "$body" ]; then
	echo "FAIL: no sig_entry in $so"
	fail=1
elif grep -E 'call +\*%' <<<"$body" | grep -q . || ! grep -qE 'jmp +\*%' <<<"$body"; then
	echo "FAIL: sig_entry calls the program's handler (or reaches it no way seen):"
	echo "$body"
	fail=1
fi
[ $fail = 0 ] && echo "exports: the $(wc -l <<<"$have") names of sampler.map; malloc and free call only glibc's malloc and live_fold"
exit $fail
