#!/usr/bin/env bash
# The sampler's unwinding as the program meets it: libunwind's address
# checks made without a pipe (sampler/tracefile.c), and no cancellation
# point inside the sampler. One argument picks the group. Environment
# (meson): ALLOCPROF, PROGS (this folder's programs).
group=$1
. "$(dirname "$(readlink -f "$0")")/lib.sh"

case $group in
cancel)
	# threads cancelled while they allocate: pthread_cancel acts at a
	# cancellation point, which must never be one inside the sampler (the
	# trace's write, libunwind's read of its pipe: the thread went with a
	# lock held, and the next one waited on it for ever, 2 runs in 4)
	for mode in --all --rate=4K; do
		out=$(timeout -s KILL 30 "$ALLOCPROF" record -q "$mode" -o c.trace "$PROGS/unwinder" cancel 40 2>err)
		expect_eq "$mode: exit status" "$?" 0
		expect_eq "$mode: output" "$out" "rounds 40"
		"$ALLOCPROF" stats --json c.trace >s.json 2>s.err || fail "$mode: stats: $(cat s.err)"
		rm -f c.trace*
	done
	;;
sigpipe2)
	# a signal handler's pipe2 while it interrupts the sampler is the
	# program's: a pipe that works (it was given libunwind's made-up
	# numbers, 1,828 times in 2,390)
	native=$("$PROGS/unwinder" sigpipe2)
	expect_eq "natively" "$native" "pipes made, bad 0"
	for mode in --all ""; do
		out=$("$ALLOCPROF" record -q $mode -o p.trace "$PROGS/unwinder" sigpipe2 2>err)
		expect_eq "${mode:-sampled}: output" "$out" "$native"
		rm -f p.trace*
	done
	;;
ownpipe)
	# a program with libunwind of its own, which closes the descriptors
	# libunwind's pipe had and puts a pipe of its own there: the
	# sampler's unwinds (the same libunwind) neither read nor write it
	native=$("$PROGS/unwinder_own")
	expect_eq "natively" "$native" "read back: HELLO"
	out=$("$ALLOCPROF" record -q --all -o o.trace "$PROGS/unwinder_own" 2>err)
	expect_eq "under record" "$out" "$native"
	;;
seccomp)
	# a filter that refuses gettid and process_vm_readv: the stacks are
	# whole all the same (libunwind's checks went through
	# process_vm_readv of the thread: every stack ended at its first
	# frame)
	for mode in --all --rate=1K; do
		out=$("$ALLOCPROF" record -q "$mode" -o s.trace "$PROGS/unwinder" seccomp 2>err)
		expect_eq "$mode: output" "$out" done
		"$ALLOCPROF" top --alloc_objects --json s.trace >t.json 2>t.err ||
			fail "$mode: top: $(cat t.err)"
		grep -q '"work' t.json || fail "$mode: no stack names work: $(head -c 400 t.json)"
		! grep -q '"<unknown>"' t.json || fail "$mode: stacks lost: $(head -c 400 t.json)"
		rm -f s.trace*
	done
	;;
*)
	echo "unknown group $group" >&2
	exit 2
	;;
esac
exit $failed
