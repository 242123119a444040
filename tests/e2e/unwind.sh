#!/bin/bash
# The sampler's walk by the unwind tables (sampler/cfi.c) against
# libunwind's: ALLOCPROF_UNWIND=check walks every stack both ways and says
# at exit how many were walked, how many came out different (must be none)
# and how many the walk gave up on (libunwind's then). testdata/frames.c
# is built here with gcc and clang (when present), optimized, with frame
# pointers and at -O0; its only stacks the walk may give up on are the
# signal handler's (through the kernel's signal frame). Then real
# programs: testdata/cxx (C++, exceptions), and python3, git, cppcheck
# where installed. The stacks recorded by the walk and by libunwind alone
# must be the same.
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD, TESTDATA_SRC.
. "$(dirname "$0")/../lib.sh"
tmp=$work

# check TAG PROG ARGS...: recorded --all with each stack compared (the
# stack cache off: every call unwound); sets walked, differ, gaveup from
# the summary line
check() {
	local tag=$1
	shift
	ALLOCPROF_UNWIND=check ALLOCPROF_STACK_CACHE=0 "$ALLOCPROF" record -q --all -o "$tmp/$tag.trace" -- "$@" \
		>"$tmp/$tag.out" 2>"$tmp/$tag.err"
	local rc=$?
	local line
	line=$(grep 'ALLOCPROF_UNWIND=check: .* stacks walked' "$tmp/$tag.err" | tail -1)
	if [ -z "$line" ]; then
		fail "$tag: no summary of the checks (record exit $rc)"
		sed 's/^/  /' "$tmp/$tag.err" | head -20
		return 1
	fi
	read -r walked differ gaveup < <(echo "$line" | sed -E 's/.*: ([0-9]+) stacks walked, ([0-9]+) different.*, ([0-9]+) given up/\1 \2 \3/')
	echo "$tag: $walked stacks walked, $differ different, $gaveup given up"
	[ "$differ" = 0 ] || {
		fail "$tag: $differ stacks differ from libunwind's"
		grep 'differs' "$tmp/$tag.err" | sed 's/^/  /'
	}
	[ "$walked" -gt 0 ] || fail "$tag: no stack walked"
}

frames_src=$TESTDATA_SRC/frames.c
builds=0
for cc in gcc clang; do
	command -v $cc >/dev/null || continue
	for flags in "-O2" "-O2 -fno-omit-frame-pointer" "-O0"; do
		tag="frames-$cc${flags// /}"
		$cc $flags -g -pthread -fno-builtin-malloc -fno-builtin-free -o "$tmp/$tag" "$frames_src" ||
			{ fail "$tag: does not build"; continue; }
		builds=$((builds + 1))
		check "$tag" "$tmp/$tag" || continue
		# 9,000 allocations and 6 in the handler (and the C library's
		# own, around them)
		grep -q '^frames: 9006 allocations, 6 in a signal handler$' "$tmp/$tag.out" ||
			fail "$tag: the program's output changed: $(cat "$tmp/$tag.out")"
		[ "$walked" -ge 9000 ] || fail "$tag: $walked stacks walked, want >= 9000"
		[ "$gaveup" -eq 6 ] || fail "$tag: the walk gave up on $gaveup stacks, want the handler's 6"
	done
done
[ $builds -gt 0 ] || fail "no compiler built testdata/frames.c"

# the stacks recorded with the stack cache (filled by the walk, or by
# libunwind's steps): the walk's and libunwind's the same
"$ALLOCPROF" record -q --all -o "$tmp/w.trace" -- "$tmp/frames-gcc-O2" >/dev/null 2>&1 &&
	ALLOCPROF_UNWIND=libunwind "$ALLOCPROF" record -q --all -o "$tmp/l.trace" -- "$tmp/frames-gcc-O2" >/dev/null 2>&1 ||
	fail "frames: record failed"
for t in w l; do
	"$ALLOCPROF" export --format=folded --sample-index=alloc_objects -o - "$tmp/$t.trace" | sort >"$tmp/$t.folded"
done
if [ -s "$tmp/w.folded" ] && cmp -s "$tmp/w.folded" "$tmp/l.folded"; then
	echo "frames: $(wc -l <"$tmp/w.folded") stacks, the same walked and by libunwind"
else
	fail "frames: the walk's stacks differ from libunwind's (-libunwind +walk)"
	diff -u "$tmp/l.folded" "$tmp/w.folded" | head -20 | sed 's/^/  /'
fi

# real programs: none of their stacks goes through a signal frame or JIT
# code, so the walk gives up on none (check fails on its own otherwise)
real() {
	check "$@" || return
	[ "$gaveup" = 0 ] || fail "$1: the walk gave up on $gaveup stacks"
}
real cxx "$TESTDATA_BUILD/cxx"
py=/usr/bin/python3
if [ -x $py ]; then
	real python3 $py -c 'import json, re; d = [json.dumps({"k": i, "v": [str(i)] * 3}) for i in range(20000)]; print(len(d))'
fi
if command -v git >/dev/null; then
	real git git -C "$TESTDATA_SRC" log --oneline -n 20 --stat
fi
if command -v cppcheck >/dev/null; then
	real cppcheck cppcheck -q "$frames_src"
fi
# A module unloaded and another loaded where it was: a rule read from the
# first must not serve the second (sampler/cfi.c, "modules unloaded").
# f in libA and libB has the same code but for its frame's size (0x210
# and 0x410 bytes), so the return address into it is the same; the
# program plants a decoy return address where A's frame would have its
# own. After N other libraries opened and closed (0, and 8191: the rules'
# generation then wraps), B's f must unwind as B's frame does.
cat >"$tmp/f.S.in" <<'ASM'
	.text
	.globl f
	.type f,@function
f:
	.cfi_startproc
	sub $SIZE, %rsp
	.cfi_def_cfa_offset SIZE+8
	mov %rsi, SIZE-8(%rsp)
	call *%rdi
	add $SIZE, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size f, .-f
	.section .note.GNU-stack,"",@progbits
ASM
cat >"$tmp/reload.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
typedef void (*ff)(void (*)(void), void *);
static void *volatile sink;
__attribute__((noinline)) static void cb(void) { sink = malloc(1000); free(sink); }
static void decoy(void) {}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	void *a = dlopen("./libA.so", RTLD_NOW);
	if (!a) return 1;
	ff fa = (ff)dlsym(a, "f");
	fa(cb, (void *)decoy);
	dlclose(a);
	for (int i = 0; i < n; i++) {
		void *c = dlopen("./libC.so", RTLD_NOW);
		if (!c) return 1;
		dlclose(c);
	}
	void *b = dlopen("./libB.so", RTLD_NOW);
	if (!b) return 1;
	ff fb = (ff)dlsym(b, "f");
	printf("%s\n", fa == fb ? "same address" : "moved");
	fb(cb, (void *)decoy);
	return 0;
}
C
(
	cd "$tmp" &&
		sed 's/SIZE/0x208/g' f.S.in >libA.S && sed 's/SIZE/0x408/g' f.S.in >libB.S &&
		sed 's/SIZE/0x108/g' f.S.in >libC.S &&
		for l in A B C; do gcc -shared -o lib$l.so lib$l.S || exit 1; done &&
		gcc -O2 -g -fno-builtin-malloc -fno-builtin-free -o reload reload.c -ldl
) || fail "reload: does not build"
# And by libunwind alone (ALLOCPROF_UNWIND=libunwind; attached, and where
# the walk gives up): unw_backtrace's cache keeps A's frame shape for the
# address, so a stack with an address in a module loaded since an unload
# is unwound again by steps (sampler/stacks.c).
for run in "0" "8191" "0 libunwind"; do
	set -- $run
	n=$1 mode=${2:-}
	out=$(cd "$tmp" && ALLOCPROF_UNWIND=$mode "$ALLOCPROF" record -q --all --max-depth 3 -o "$tmp/reload$n$mode.trace" -- ./reload $n 2>&1)
	got=$("$ALLOCPROF" export --format=folded --sample-index=alloc_objects -o - "$tmp/reload$n$mode.trace" | grep ';cb ')
	if [ "$out" != "same address" ]; then
		echo "reload $n $mode: libB not where libA was ($out): not a test of stale rules here"
	elif [ "$got" = "[truncated];main;f;cb 2" ]; then
		echo "reload $n $mode: B's frame unwound as B's"
	else
		fail "reload $n $mode: stacks through B's f: '$got', want '[truncated];main;f;cb 2'"
	fi
done
exit $failed
