#!/usr/bin/env bash
# Tests of `allocprof record` on programs that could tell they are
# profiled, or lose an image (issue 24). One argument picks the group:
# atfork, exec, coro, seccomp, vfork, ufork or sigfork. Environment (from meson): ALLOCPROF (the
# allocprof binary; unset for the programs) and
# one variable per test program (ATFORK, REEXEC, EXECAT, CORO, SECCOMP,
# VFORK, UFORK, SIGFORK).
# Every run is bounded with `timeout -s KILL`: a hang is a failure, not
# a stuck test.
set -u
export LC_ALL=C
group=$1
# the programs report whether ALLOCPROF is set: natively it is not
AP=$ALLOCPROF
unset ALLOCPROF
. "$(dirname "$0")/../record/lib.sh"

# flat TRACE FUNCTION [top options...]: FUNCTION's flat alloc_objects
# in `top` of TRACE (0 if it is not listed).
flat() {
	local trace=$1 fn=$2
	shift 2
	"$AP" top --alloc_objects -n 1000 --nodefraction 0 "$@" "$trace" 2>/dev/null |
		awk -v f="$fn" '$NF == f { print $1; found = 1 } END { if (!found) print 0 }'
}

# same_run NAME WANT_RC NATIVE_OUT -- record args...: runs record
# (bounded), checks the exit status and that stdout is the native one.
same_run() {
	local name=$1 want=$2 native=$3
	shift 4
	timeout -s KILL 20 "$AP" record -q "$@" >"$name.out" 2>"$name.err"
	local rc=$?
	expect_eq "$name: exit status" "$rc" "$want"
	diff -u "$native" "$name.out" >/dev/null || fail "$name: output differs from the native run: $(diff "$native" "$name.out" | head -5)"
}

case $group in
atfork)
	# Fork handlers that allocate, registered by a library's constructor
	# (before the sampler's) and by main (after): fork returns in the
	# parent and the child, in every mode; a small rate makes the frees
	# in the handlers reach the tracked-pointer set.
	"$ATFORK" >native.out 2>&1
	want=$?
	expect_eq "native exit status" "$want" 0
	for mode in default all rate64; do
		case $mode in
		default) opts=() ;;
		all) opts=(--all) ;;
		rate64) opts=(--rate 64) ;;
		esac
		same_run "$mode" "$want" native.out -- "${opts[@]}" -o "$mode.trace" "$ATFORK"
		[ -s "$mode.err" ] && fail "$mode: unexpected stderr: $(head -3 "$mode.err")"
	done
	# --all: the prepare and parent handlers' blocks are the parent's, the
	# child handlers' the child's, each in its own trace
	kids=(all.trace.*)
	expect_eq "--all: child traces" "${#kids[@]}" 2
	for fn in lib_prepare lib_parent main_prepare main_parent; do
		expect_eq "--all: parent trace, $fn" "$(flat all.trace "$fn" --no-children)" 2
	done
	expect_eq "--all: parent trace, lib_child" "$(flat all.trace lib_child --no-children)" 0
	for k in "${kids[@]}"; do
		[ -e "$k" ] || continue
		expect_eq "--all: $k, lib_child" "$(flat "$k" lib_child --no-children)" 1
		expect_eq "--all: $k, main_child" "$(flat "$k" main_child --no-children)" 2
		expect_eq "--all: $k, child_work" "$(flat "$k" child_work --no-children)" 5
		"$AP" stats --json --no-children "$k" >k.json 2>/dev/null || fail "stats $k"
		expect_eq "--all: $k, alloc_objects" "$(jget k.json alloc_objects)" 8
		expect_eq "--all: $k, ended" "$(jget k.json end_reason)" _exit
	done
	;;
exec)
	# A sandbox that removes LD_PRELOAD and executes itself again ends
	# (natively: once); the image without LD_PRELOAD is not profiled and
	# finds no ALLOCPROF either
	"$REEXEC" sandbox >native.out 2>&1
	want=$?
	expect_eq "sandbox: native exit status" "$want" 7
	for mode in default all; do
		opts=()
		[ $mode = all ] && opts=(--all)
		same_run "sandbox-$mode" "$want" native.out -- "${opts[@]}" -o "sb-$mode.trace" "$REEXEC" sandbox
		n=$(ls | grep -c "^sb-$mode\.trace")
		expect_eq "sandbox $mode: trace files" "$n" 1
		"$AP" stats --json "sb-$mode.trace" >sb.json 2>sb.err || fail "sandbox $mode: stats: $(cat sb.err)"
		[ -s sb.json ] && expect_eq "sandbox $mode: ended" "$(jget sb.json end_reason)" exec
	done

	# env -i and env -u LD_PRELOAD give a clean environment: the program
	# runs unprofiled, as natively; env's own trace ends with the exec
	for how in "-i" "-u LD_PRELOAD"; do
		# shellcheck disable=SC2086
		env $how "$REEXEC" plain >native.out 2>&1
		want=$?
		expect_eq "env $how: native exit status" "$want" 3
		# shellcheck disable=SC2086
		same_run "env $how" "$want" native.out -- --all -o env.trace env $how "$REEXEC" plain
		expect_eq "env $how: trace files" "$(ls | grep -c '^env\.trace')" 1
		"$AP" stats --json env.trace >env.json 2>env.err || fail "env $how: stats: $(cat env.err)"
		if [ -s env.json ]; then
			expect_eq "env $how: ended" "$(jget env.json end_reason)" exec
			expect_eq "env $how: program" "$(jget env.json program)" "$(command -v env)"
		fi
		expect_eq "env $how: plain_work recorded" "$(flat env.trace plain_work)" 0
		rm -f env.trace*
	done

	# an environment that keeps the preload but lost the settings gets
	# them back (an inheritance, not a removal): profiled
	timeout -s KILL 20 "$AP" record -q --all -o u.trace env -u ALLOCPROF "$REEXEC" plain >u.out 2>&1
	expect_eq "env -u ALLOCPROF: exit status" $? 3
	expect_eq "env -u ALLOCPROF: output" "$(cat u.out)" "plain: LD_PRELOAD set, ALLOCPROF set"
	expect_eq "env -u ALLOCPROF: plain_work" "$(flat u.trace plain_work)" 300

	# a shell passes its environment on: the program is profiled
	sh -c "'$REEXEC' plain; true" >native.out 2>&1
	sed -i 's/LD_PRELOAD unset, ALLOCPROF unset/LD_PRELOAD set, ALLOCPROF set/' native.out
	same_run "sh -c" 0 native.out -- --all -o sh.trace sh -c "'$REEXEC' plain; true"
	expect_eq "sh -c: plain_work" "$(flat sh.trace plain_work)" 300

	# posix_spawn and posix_spawnp exec inside libc, not through the exec
	# functions: the child they start, with the parent's environment, is
	# followed all the same (its image loads the preload it inherits), a
	# process of the run with its own trace
	for how in spawn spawnp; do
		"$REEXEC" $how >native.out 2>&1
		want=$?
		expect_eq "$how: native exit status" "$want" 3
		sed -i 's/LD_PRELOAD unset, ALLOCPROF unset/LD_PRELOAD set, ALLOCPROF set/' native.out
		same_run "$how" "$want" native.out -- --all -o sp.trace "$REEXEC" $how
		expect_eq "$how: plain_work" "$(flat sp.trace plain_work)" 300
		expect_eq "$how: trace files" "$(ls | grep -c '^sp\.trace')" 2
		rm -f sp.trace*
	done

	# ... and one started with an environment that no longer preloads
	# the sampler runs unprofiled, as after exec: not followed, and the
	# parent's trace says so (END's spawn_unfollowed), as do record's
	# summary and the views
	for how in spawn-clean spawnp-clean; do
		"$REEXEC" $how >native.out 2>&1
		want=$?
		expect_eq "$how: native exit status" "$want" 3
		expect_eq "$how: native output" "$(cat native.out)" "plain: LD_PRELOAD unset, ALLOCPROF unset"
		timeout -s KILL 20 "$AP" record --all -o sp.trace "$REEXEC" $how >sp.out 2>sp.err
		expect_eq "$how: exit status" $? "$want"
		diff -u native.out sp.out >/dev/null || fail "$how: output differs from the native run: $(cat sp.out)"
		expect_eq "$how: trace files" "$(ls | grep -c '^sp\.trace')" 1
		expect_eq "$how: plain_work" "$(flat sp.trace plain_work)" 0
		grep -Eq "^allocprof: 1 program started with posix_spawn and an environment that no longer preloads the sampler ran unprofiled, not in the run: started by pid [0-9]+ \($REEXEC $how\)$" sp.err ||
			fail "$how: record's summary: $(cat sp.err)"
		"$AP" stats --json sp.trace >sp.json 2>sp.err2 || fail "$how: stats: $(cat sp.err2)"
		[ -s sp.json ] && expect_eq "$how: spawn_unfollowed" "$(jget sp.json spawn_unfollowed)" 1
		grep -q "^allocprof: sp.trace: its process started 1 program with posix_spawn and an environment that no longer preloads the sampler ($REEXEC): it ran unprofiled, and is not in the run$" sp.err2 ||
			fail "$how: stats does not say the spawned program is not in the run: $(cat sp.err2)"
		rm -f sp.trace*
	done
	# (under --no-children, which takes the preload out itself, nothing
	# is said)
	timeout -s KILL 20 "$AP" record --all --no-children -o sp.trace "$REEXEC" spawn >sp.out 2>sp.err
	expect_eq "spawn --no-children: exit status" $? 3
	grep -q unprofiled sp.err && fail "spawn --no-children: record says: $(cat sp.err)"
	"$AP" stats --json sp.trace >sp.json 2>/dev/null
	[ -s sp.json ] && expect_eq "spawn --no-children: spawn_unfollowed" "$(jget sp.json spawn_unfollowed)" 0
	rm -f sp.trace*

	# execveat and fexecve replace the image as execve does: both images'
	# blocks are in the run, the first image's trace ends with the exec;
	# so do execveat and execve made through syscall(3)
	for how in fexecve execveat-fd execveat-path syscall-execveat syscall-execve; do
		"$EXECAT" "$how" >native.out 2>&1
		want=$?
		expect_eq "$how: native exit status" "$want" 5
		same_run "$how" "$want" native.out -- --all -o x.trace "$EXECAT" "$how"
		expect_eq "$how: first_image" "$(flat x.trace first_image)" 300
		expect_eq "$how: next_image" "$(flat x.trace next_image)" 200
		"$AP" stats --json --no-children x.trace >x.json 2>x.err || fail "$how: stats: $(cat x.err)"
		[ -s x.json ] && expect_eq "$how: first image ended" "$(jget x.json end_reason)" exec
		[ -s x.json ] && expect_eq "$how: followed" "$(jget x.json exec_unfollowed)" false
		[ -s x.err ] && fail "$how: stats said: $(cat x.err)"
		"$AP" stats --json x.trace >x.json 2>x.err || fail "$how: stats: $(cat x.err)"
		if [ -s x.json ]; then
			n=$(jget x.json alloc_objects)
			[ "${n%.*}" -ge 500 ] || fail "$how: alloc_objects of the run: $n, not both images' 500"
			# (the run ended where its last image did)
			expect_eq "$how: the run ended" "$(jget x.json end_reason)" exit
			expect_eq "$how: the run's status" "$(jget x.json end_status)" 5
		fi
		expect_eq "$how: trace files" "$(ls x.trace* | tr '\n' ' ')" "x.trace x.trace.exec1 "
		rm -f x.trace*
	done
	;;
vfork)
	# A vfork child that leaves by _exit, _Exit or a failed exec shares
	# the parent's memory: the parent's trace goes on (1000 blocks of
	# parent_work after the child is gone), in both modes.
	for how in exit Exit exec; do
		"$VFORK" $how >native.out 2>&1
		want=$?
		expect_eq "$how: native exit status" "$want" 0
		for mode in default all; do
			opts=()
			[ $mode = all ] && opts=(--all)
			same_run "vfork-$how-$mode" "$want" native.out -- "${opts[@]}" -o v.trace "$VFORK" $how
			if [ $mode = all ]; then
				expect_eq "$how --all: parent_work" "$(flat v.trace parent_work)" 1000
			else
				"$AP" stats --json v.trace >v.json 2>/dev/null || fail "$how: stats"
				c=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["calls"])' v.json 2>/dev/null)
				[ "${c:-0}" -ge 1000 ] || fail "$how default: $c allocator calls counted, want 1000 or more"
			fi
			rm -f v.trace*
		done
	done
	;;
ufork)
	# A child made by _Fork (no fork handler runs) has a trace of its
	# own, and the parent's has only the parent's blocks, in both modes,
	# also when the parent dies by SIGKILL and record finishes its trace
	# from the buffers it shares with it (the child's 3000 blocks were
	# in the parent's trace, and the child had none).
	for how in exit kill; do
		"$UFORK" $how >native.out 2>&1
		want=$?
		expect_eq "$how: native output" "$(cat native.out)" "$([ $how = exit ] && echo 'child 0')"
		for mode in default all; do
			opts=()
			[ $mode = all ] && opts=(--all)
			same_run "ufork-$how-$mode" "$want" native.out -- "${opts[@]}" -o u.trace "$UFORK" $how
			kids=$(ls u.trace.* 2>/dev/null)
			expect_eq "$how $mode: child traces" "$(echo "$kids" | grep -c .)" 1
			if [ $mode = all ]; then
				expect_eq "$how --all: parent's child_work" "$(flat u.trace child_work --no-children)" 0
				expect_eq "$how --all: parent's parent_work" "$(flat u.trace parent_work --no-children)" \
					"$([ $how = exit ] && echo 2000 || echo 1000)"
				[ -n "$kids" ] && expect_eq "$how --all: the child's child_work" "$(flat "$kids" child_work --no-children)" 3000
			fi
			rm -f u.trace*
		done
	done
	;;
sigfork)
	# A fork (or _Fork) from a signal handler that interrupted the
	# sampler: fork_prepare took none of the locks the interrupted code
	# may hold (it waited for ever on one, 3 runs in 5 at --rate 4K), and
	# the child runs unrecorded, its sampler off and nothing reset under
	# the interrupted code (a child trace was corrupt, 2 runs in 5, and
	# the run's stats refused). Under record a fork and its child take
	# longer than the millisecond between alarms: the last fork stops
	# them, or the loop would never run again to see the count.
	"$SIGFORK" fork 50 >native.out
	expect_eq "native" "$(cat native.out)" "bad 0
forks 50"
	for how in fork _Fork; do
		for mode in "--rate 4K" --all; do
			for i in 1 2 3; do
				rm -rf s && mkdir s
				out=$(timeout -s KILL 100 "$AP" record -q $mode -o s/t "$SIGFORK" $how 50)
				rc=$?
				expect_eq "$how $mode run $i: record's exit status (137: hung)" "$rc" 0
				expect_eq "$how $mode run $i: output" "$out" "$(cat native.out)"
				"$AP" stats s/t >/dev/null 2>s.err ||
					fail "$how $mode run $i: stats of the run: $(head -1 s.err)"
			done
		done
	done
	;;
coro)
	# Coroutines on makecontext stacks of 8, 6 and 4 KiB that allocate:
	# the sampler's slow path runs on its own stack, and the coroutine's
	# blocks have their stacks (coro_work under coro_entry)
	for size in 8192 6144 4096; do
		"$CORO" $size >native.out 2>&1
		want=$?
		expect_eq "$size: native exit status" "$want" 0
		for mode in default all; do
			opts=()
			[ $mode = all ] && opts=(--all)
			same_run "$size-$mode" "$want" native.out -- "${opts[@]}" -o "c.trace" "$CORO" $size
			n=$(flat c.trace coro_work)
			if [ $mode = all ]; then
				# 2000 mallocs and 2000 reallocs, as valgrind counts them
				expect_eq "$size --all: coro_work" "$n" 4000
			else
				[ "${n%.*}" -gt 0 ] || fail "$size default: no sample in coro_work"
			fi
			c=$("$AP" top --alloc_objects -n 100 c.trace 2>/dev/null | awk '$NF == "coro_entry" { print $4 }')
			expect_eq "$size $mode: coro_entry's cum is coro_work's" "$c" "$n"
			rm -f c.trace
		done
	done
	# a signal handler on an 8 KiB sigaltstack that allocates
	"$CORO" sigalt >native.out 2>&1
	want=$?
	expect_eq "sigalt: native exit status" "$want" 0
	for mode in default all; do
		opts=()
		[ $mode = all ] && opts=(--all)
		same_run "sigalt-$mode" "$want" native.out -- "${opts[@]}" -o "c.trace" "$CORO" sigalt
		[ -s "sigalt-$mode.err" ] && fail "sigalt $mode: stderr: $(head -3 "sigalt-$mode.err")"
		[ $mode = all ] && expect_eq "sigalt --all: handler_work" "$(flat c.trace handler_work)" 1000
		rm -f c.trace
	done
	;;
seccomp)
	# A filter that answers EPERM to system calls the sampler makes
	# (newfstatat, openat, gettid, getpid, rt_sigprocmask): the program
	# runs as natively, the trace goes on and ends as usual, and record
	# says in one line which calls were refused
	"$SECCOMP" errno >native.out 2>&1
	want=$?
	expect_eq "errno: native exit status" "$want" 0
	for mode in default all; do
		opts=()
		[ $mode = all ] && opts=(--all)
		same_run "errno-$mode" "$want" native.out -- "${opts[@]}" -o s.trace "$SECCOMP" errno
		expect_eq "errno $mode: stderr lines" "$(wc -l <"errno-$mode.err")" 1
		# (gettid in both modes; newfstatat no longer: chunks go into
		# the ring, and no descriptor is checked before each)
		want_call=gettid
		grep -q "^allocprof: s.trace: the program's seccomp filter refused .*$want_call.* to the sampler (Operation not permitted): " "errno-$mode.err" ||
			fail "errno $mode: no line naming the refused calls: $(cat "errno-$mode.err")"
		"$AP" stats --json s.trace >s.json 2>s.err || fail "errno $mode: stats: $(cat s.err)"
		if [ -s s.json ]; then
			expect_eq "errno $mode: truncated" "$(jget s.json truncated)" false
			expect_eq "errno $mode: ended" "$(jget s.json end_reason)" exit
		fi
		if [ $mode = all ]; then
			expect_eq "errno --all: before_filter" "$(flat s.trace before_filter)" 1000
			expect_eq "errno --all: after_filter" "$(flat s.trace after_filter)" 2000
		fi
		rm -f s.trace
	done

	# newfstatat alone refused, and a child forked after the filter:
	# the child's trace, just made, is its own all the same (its fstat
	# refused, it was taken for another file: left empty beside a second
	# one, and the empty one made the whole run unreadable). fcntl
	# refused, the same (F_GETFL, F_SETFD, F_SETFL), and the child, which
	# executes /bin/true at once, cannot hand its trace on (F_SETFD): it
	# ends (exec), and the image makes its own .exec1 (it was left
	# without END, beside an empty one)
	for call in fstat fcntl; do
		"$SECCOMP" $call >native.out 2>&1
		want=$?
		for mode in default all; do
			opts=()
			[ $mode = all ] && opts=(--all)
			rm -f f.trace*
			same_run "$call-$mode" "$want" native.out -- "${opts[@]}" -o f.trace "$SECCOMP" $call
			kids="f.trace. " after=4000
			[ $call = fcntl ] && kids="f.trace. f.trace..exec " after=2000
			expect_eq "$call $mode: child traces" \
				"$(ls f.trace.* 2>/dev/null | sed 's/[0-9]//g' | sort | tr '\n' ' ')" "$kids"
			"$AP" stats --json f.trace >f.json 2>f.err ||
				fail "$call $mode: stats of the run: $(cat f.err)"
			[ -s f.json ] && expect_eq "$call $mode: truncated" "$(jget f.json truncated)" false
			[ $call = fstat ] || grep -q "refused fcntl to the sampler" "$call-$mode.err" ||
				fail "$call $mode: record does not name fcntl: $(cat "$call-$mode.err")"
			[ $mode = all ] && expect_eq "$call --all: after_filter, parent and child" \
				"$(flat f.trace after_filter)" $after
		done
	done
	rm -f f.trace*

	# getrusage refused: record names it (not "system call 98") and what
	# the trace lacks for it
	"$SECCOMP" usage >native.out 2>&1
	want=$?
	timeout -s KILL 20 "$AP" record -o u.trace "$SECCOMP" usage >u.out 2>u.err
	expect_eq "usage: exit status" $? "$want"
	grep -q "^allocprof: u.trace: the program's seccomp filter refused getrusage to the sampler (Operation not permitted): the trace has no context switches or page faults" u.err ||
		fail "usage: record does not name getrusage: $(cat u.err)"
	rm -f u.trace*

	# A filter that kills for the calls the sampler can do without
	# (newfstatat, openat, gettid, getpid): the sampler runs the filter
	# before making them, and does not. The program runs as natively,
	# the whole trace is kept, and record names the calls.
	"$SECCOMP" kill >native.out 2>&1
	want=$?
	expect_eq "kill: native exit status" "$want" 0
	for mode in default all; do
		opts=()
		[ $mode = all ] && opts=(--all)
		same_run "kill-$mode" "$want" native.out -- "${opts[@]}" -o k.trace "$SECCOMP" kill
		want_call=gettid
		grep -q "^allocprof: k.trace: the program's seccomp filter refused .*$want_call.* to the sampler (the filter kills for them: the sampler did without): " "kill-$mode.err" ||
			fail "kill $mode: no line naming the calls: $(cat "kill-$mode.err")"
		"$AP" stats --json k.trace >k.json 2>/dev/null || fail "kill $mode: stats"
		[ -s k.json ] && expect_eq "kill $mode: ended" "$(jget k.json end_reason)" exit
		[ $mode = all ] && expect_eq "kill --all: after_filter" "$(flat k.trace after_filter)" 2000
		rm -f k.trace
	done

	# One that also kills for rt_sigprocmask, which the profiler's locks
	# make, cannot be profiled (man/allocprof-record.1.in, SECCOMP): the
	# program may die of SIGSYS where it would have run on. What was
	# recorded before the filter is in the trace, and record says what
	# killed the program.
	"$SECCOMP" killall >native.out 2>&1
	expect_eq "killall: native exit status" $? 0
	timeout -s KILL 20 "$AP" record -o ka.trace "$SECCOMP" killall >ka.out 2>ka.err
	rc=$?
	if [ $rc = 159 ]; then
		grep -q "killed by SIGSYS (a seccomp filter's, for a system call of the program's or one the sampler makes: see SECCOMP in allocprof-record(1))" ka.err ||
			fail "killall: record does not say: $(cat ka.err)"
	else
		expect_eq "killall: exit status" $rc 0
	fi
	timeout -s KILL 20 "$AP" record --all -o ka.trace "$SECCOMP" killall >ka.out 2>ka.err
	rc=$?
	[ $rc = 0 ] || [ $rc = 159 ] || fail "killall --all: exit status $rc"
	expect_eq "killall --all: before_filter" "$(flat ka.trace before_filter)" 1000
	;;
*)
	echo "unknown group $group"
	exit 2
	;;
esac
exit $failed
