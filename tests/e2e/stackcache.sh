#!/bin/bash
# The sampler's stack cache (sampler/stacks.h) against construction and against
# unwinding every time: testdata/stackcache reaches one call site along
# paths that share its return address and stack pointer, recursively, and
# from threads that reuse each other's stacks. The folded stacks of a
# recording (--all) must be the by-construction counts, and a recording
# with ALLOCPROF_STACK_CACHE=0 must give the same stacks, with --all and
# sampled (same seed), and so must one with ALLOCPROF_STACK_CACHE=2 (every
# key seen twice filled, whatever it costs).
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD.
. "$(dirname "$0")/../lib.sh"
tmp=$work
prog=$TESTDATA_BUILD/stackcache

# folded TAG ARGS...: record, export folded alloc_objects, keep the part
# from main (or start_thread) on
folded() {
	local tag=$1
	shift
	if ! "$ALLOCPROF" record -q -o "$tmp/$tag.trace" "$@" -- "$prog" >"$tmp/$tag.out" 2>&1; then
		fail "$tag: record failed"
		cat "$tmp/$tag.out"
		return 1
	fi
	"$ALLOCPROF" export --format=folded --sample-index=alloc_objects -o - "$tmp/$tag.trace" |
		sed -e 's/.*;main;/main;/' -e 's/.*;start_thread;/start_thread;/' | sort >"$tmp/$tag.folded"
}

folded all --all || exit 1
{
	echo "main;grow_a;grow 3996"
	echo "main;grow_b;grow 2004"
	stack=leaf
	for d in $(seq 12); do
		stack="rec;$stack"
		echo "main;$stack 1000"
	done
	echo "main;via_a;leaf 1000"
	echo "main;via_b;leaf 2000"
	echo "start_thread;thread_a;via_a;leaf 2000"
	echo "start_thread;thread_b;via_b;leaf 2000"
} | sort >"$tmp/want"
# the program's own lines (thread creation inside libc is not ours to count)
grep -E ';(leaf|grow) ' "$tmp/all.folded" >"$tmp/got"
if cmp -s "$tmp/want" "$tmp/got"; then
	echo "stackcache --all: $(wc -l <"$tmp/got") stacks as constructed"
else
	fail "stackcache --all: stacks differ from the construction (-want +got)"
	diff -u "$tmp/want" "$tmp/got" | sed 's/^/  /'
fi

ALLOCPROF_STACK_CACHE=0 folded all-nocache --all || exit 1
cmp -s "$tmp/all.folded" "$tmp/all-nocache.folded" || {
	fail "stackcache --all: the cache changes the stacks (-off +on)"
	diff -u "$tmp/all-nocache.folded" "$tmp/all.folded" | sed 's/^/  /'
}
# =2: every key seen twice is filled, as if the cache always paid (by
# default fills wait until hits have paid for them, and this small
# program may make few)
ALLOCPROF_STACK_CACHE=2 folded all-always --all || exit 1
cmp -s "$tmp/all-always.folded" "$tmp/all-nocache.folded" || {
	fail "stackcache --all: the cache filling every key changes the stacks (-off +on)"
	diff -u "$tmp/all-nocache.folded" "$tmp/all-always.folded" | sed 's/^/  /'
}
# END's unwind_ns: the sampler's time unwinding, with the cache (which
# advise takes off the recorded run's CPU time); none without it (a
# replay under the sampler would unwind every call too)
unwind() { "$ALLOCPROF" advise --no-measure --json -n 0 "$tmp/$1.trace" 2>/dev/null | "$_lib_py" -c 'import json, sys; print(json.load(sys.stdin)["program_unwind_ns"])'; }
u_on=$(unwind all) u_off=$(unwind all-nocache)
echo "stackcache --all: unwinding $u_on ns with the cache, $u_off ns said without it"
[ "${u_on:-0}" -gt 0 ] && [ "$u_off" = 0 ] ||
	fail "stackcache --all: END's unwind_ns $u_on with the cache (want > 0), $u_off without (want 0)"
ALLOCPROF_TEST_SEED=11 folded sampled --rate 256 || exit 1
ALLOCPROF_TEST_SEED=11 ALLOCPROF_STACK_CACHE=0 folded sampled-nocache --rate 256 || exit 1
ALLOCPROF_TEST_SEED=11 ALLOCPROF_STACK_CACHE=2 folded sampled-always --rate 256 || exit 1
cmp -s "$tmp/sampled-always.folded" "$tmp/sampled-nocache.folded" ||
	fail "stackcache --rate 256: the cache filling every key changes the stacks"
if [ ! -s "$tmp/sampled.folded" ]; then
	fail "stackcache --rate 256: no stacks"
elif ! cmp -s "$tmp/sampled.folded" "$tmp/sampled-nocache.folded"; then
	fail "stackcache --rate 256: the cache changes the stacks (-off +on)"
	diff -u "$tmp/sampled-nocache.folded" "$tmp/sampled.folded" | sed 's/^/  /'
else
	echo "stackcache --rate 256: $(wc -l <"$tmp/sampled.folded") stacks, same with and without the cache"
fi
exit $failed
