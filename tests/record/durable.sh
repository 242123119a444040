#!/usr/bin/env bash
# Nothing lost (issue 24): what a process recorded survives how it ended
# (SIGKILL, the exit_group system call past exit(): the sampler's buffers
# are a file record finishes), the frees glibc makes after END are in the
# trace, a program with its own malloc is said to be one, and record's
# memory follows the threads alive, not the threads there were. One
# argument picks the group. Environment (from meson): ALLOCPROF, PROGS
# (the directory of this folder's programs), MAXRSS.
group=$1
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# durable_kill's pid (in $pid), once it printed more than n lines to
# `out`; the test ends if it did not start
started() {
	pid=
	for _ in $(seq 1 500); do
		pid=$(sed -n "s/^pid //p" out 2>/dev/null)
		[ -n "$pid" ] && [ "$(wc -l <out)" -gt "$1" ] && break
		sleep 0.01
	done
	[ -n "$pid" ] || { fail "the program did not start"; exit 1; }
}

case $group in
exitgroup)
	# 10,000 mallocs, then syscall(SYS_exit_group, 7): every one in the
	# trace, which ends as the exit_group call with its status
	"$ALLOCPROF" record --all -o e.trace "$PROGS/durable_exit" 2>err
	expect_eq "exit status" "$?" 7
	grep -q "ended by the exit_group system call" err || fail "record said: $(cat err)"
	"$ALLOCPROF" stats --json e.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	expect_eq "alloc_objects" "$(jget s.json alloc_objects)" 10000
	expect_eq "inuse_objects" "$(jget s.json inuse_objects)" 10000
	expect_eq "end_reason" "$(jget s.json end_reason)" exit_group
	expect_eq "end_status" "$(jget s.json end_status)" 7
	expect_eq "truncated" "$(jget s.json truncated)" false
	expect_eq "calls (not known)" "$(jget s.json calls)" null
	[ -s s.err ] && fail "stats warned: $(cat s.err)"
	[ -e e.trace.buffers ] && fail "the buffers file is left"
	;;
sigkill)
	# 4 threads, killed (SIGKILL, the program, not record) after a
	# second or more: the trace holds at least the allocations the
	# program said it had done, reads without an error and ends as
	# killed by SIGKILL
	"$ALLOCPROF" record --all -o k.trace "$PROGS/durable_kill" >out 2>err &
	rec=$!
	started 20
	sleep 1
	kill -KILL "$pid"
	wait "$rec"
	expect_eq "record's exit status" "$?" 137
	said=$(grep -v '^pid' out | tail -n 1)
	[ "${said:-0}" -ge 1000 ] || fail "the program printed no count: $(tail -n 2 out)"
	grep -q "killed by a signal it cannot catch" err || fail "record said: $(cat err)"
	"$ALLOCPROF" stats --json k.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	[ -s s.err ] && fail "stats warned: $(cat s.err)"
	n=$(jget s.json alloc_objects)
	[ "${n%.*}" -ge "$said" ] || fail "alloc_objects $n, the program said $said"
	expect_eq "end_reason" "$(jget s.json end_reason)" killed
	expect_eq "end_status" "$(jget s.json end_status)" 9
	expect_eq "truncated" "$(jget s.json truncated)" false
	# every block freed but the 64 each thread keeps (and stdio's)
	u=$(jget s.json inuse_objects)
	[ "${u%.*}" -le 300 ] || fail "inuse_objects $u: frees lost"
	"$ALLOCPROF" top --inuse_objects k.trace >/dev/null 2>t.err || fail "top: $(cat t.err)"
	[ -e k.trace.buffers ] && fail "the buffers file is left"
	;;
recordkilled)
	# record itself killed while the program runs: the program runs on
	# to its end as natively, and the trace, which nobody finishes, reads
	# whole. --all: its sampler's ring fills, nobody drains it for a
	# second: it writes its trace itself from then on; sampled, the ring
	# never fills, and END finds nobody looking: the sampler writes what
	# the ring holds and END itself
	for mode in --all --rate=64K; do
		rm -f r.trace*
		"$ALLOCPROF" record "$mode" -o r.trace "$PROGS/durable_kill" 2000000 >out 2>err &
		rec=$!
		started 5
		kill -KILL "$rec"
		wait "$rec" 2>/dev/null
		for _ in $(seq 1 1200); do
			[ -e "/proc/$pid" ] || break
			sleep 0.05
		done
		[ -e "/proc/$pid" ] && { kill -KILL "$pid"; fail "$mode: the program did not end in 60 s"; }
		expect_eq "$mode: the program's last line" "$(tail -n 1 out)" done
		"$ALLOCPROF" stats --json r.trace >s.json 2>s.err || fail "$mode: stats: $(cat s.err)"
		n=$(jget s.json calls)
		[ "${n%.*}" -ge 2000000 ] || fail "$mode: calls $n, the program made 2000000 or more"
		expect_eq "$mode: end_reason" "$(jget s.json end_reason)" _exit
		expect_eq "$mode: truncated" "$(jget s.json truncated)" false
	done
	;;
atexit)
	# glibc frees the blocks of exit handlers past the first 32 while
	# exit() runs, after the sampler wrote END: valgrind sees them freed
	"$ALLOCPROF" record --all -o a.trace "$PROGS/durable_atexit" 2>err
	expect_eq "exit status" "$?" 0
	"$ALLOCPROF" stats --json a.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	want=0
	if command -v valgrind >/dev/null; then
		valgrind "$PROGS/durable_atexit" 2>vg
		want=$(sed -n 's/.*in use at exit: [0-9,]* bytes in \([0-9,]*\) blocks/\1/p' vg | tr -d ,)
		calls=$(sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' vg | tr -d ,)
		expect_eq "alloc_objects (valgrind's)" "$(jget s.json alloc_objects)" "$calls"
	fi
	expect_eq "inuse_objects (valgrind's in use at exit)" "$(jget s.json inuse_objects)" "$want"
	expect_eq "free_objects" "$(jget s.json free_objects)" "$(jget s.json alloc_objects)"
	expect_eq "end_reason" "$(jget s.json end_reason)" exit
	expect_eq "end_status" "$(jget s.json end_status)" 0
	expect_eq "calls" "$(jget s.json calls)" "$(jget s.json alloc_objects)"
	"$ALLOCPROF" top --inuse_objects a.trace >top 2>&1 || fail "top: $(cat top)"
	[ -e a.trace.buffers ] && fail "the buffers file is left"
	;;
ownlog)
	# the program's own `log`, exported, is not the sampler's: without
	# libm of its own, the sampler called it at every sample (and the
	# program printed what it was given); nor does the sampler load libm
	# into a program that does not
	"$PROGS/own_log" >plain 2>plain.err
	expect_eq "output without record" "$(cat plain)" "log calls 0, libm not loaded"
	"$ALLOCPROF" record -o l.trace "$PROGS/own_log" >out 2>err
	expect_eq "exit status" "$?" 0
	expect_eq "output" "$(cat out)" "log calls 0, libm not loaded"
	grep -q "^log:" err && fail "the program's log ran: $(head -n 3 err)"
	"$ALLOCPROF" stats --json l.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	n=$(jget s.json samples)
	# 195 expected (95.4 MiB at 512 KiB); a bad interval samples all or none
	[ "${n%.*}" -ge 120 ] && [ "${n%.*}" -le 280 ] || fail "$n samples, about 195 expected"
	;;
ownmalloc)
	# the program's malloc is its own: record and stats say so instead of
	# calling an empty trace exact
	"$ALLOCPROF" record --all -o o.trace "$PROGS/own_malloc" >out 2>err
	expect_eq "exit status" "$?" 0
	expect_eq "output" "$(cat out)" "own_malloc: done"
	expect_eq "record's line" "$(grep -c 'has a malloc of its own (in .*own_malloc)' err)" 1
	"$ALLOCPROF" stats o.trace >s.txt 2>&1
	grep -q "^allocator  *the program's own malloc, in .*own_malloc: these counts are not the program's allocations" s.txt ||
		fail "stats: $(cat s.txt)"
	grep -q "every allocation (exact)" s.txt && fail "stats calls it exact: $(cat s.txt)"
	"$ALLOCPROF" stats --json o.trace >s.json
	case "$(jget s.json malloc_owner)" in
	*/own_malloc) ;;
	*) fail "malloc_owner: $(jget s.json malloc_owner)" ;;
	esac
	# five children with a malloc of their own (a shell's loop): the
	# first's line, then one line for the four others, not a line each
	"$ALLOCPROF" record -q --all -o om.trace sh -c 'for i in 1 2 3 4 5; do "$0"; done' \
		"$PROGS/own_malloc" >out 2>err
	expect_eq "five children: exit status" "$?" 0
	expect_eq "five children: lines of their own" "$(grep -c 'has a malloc of its own (in .*own_malloc)' err)" 1
	grep -qx "allocprof: and in 4 more child traces om.trace.\*: a program with a malloc of its own" err ||
		fail "five children: no line for the four others: $(cat err)"
	# and a program whose malloc is the C library's has none, also when
	# it takes malloc's address in non-PIE code (python3 does): a
	# canonical PLT entry is no malloc of its own
	for p in durable_atexit plt_malloc; do
		"$ALLOCPROF" record --all -o x.trace "$PROGS/$p" >/dev/null 2>err
		"$ALLOCPROF" stats --json x.trace >x.json
		expect_eq "malloc_owner of $p" "$(jget x.json malloc_owner)" null
		grep -q "malloc of its own" err && fail "record $p: $(cat err)"
		expect_eq "$p: its allocations" "$(jget x.json calls)" "$(jget x.json alloc_objects)"
	done
	;;
threads)
	# 2,000 threads one after the other: record's memory follows the
	# threads alive (it took 2 MiB per thread ever made: 4.2 GB)
	"$MAXRSS" "$ALLOCPROF" record --all -o t.trace "$PROGS/short_threads" 2000 2>err 3>rss
	expect_eq "exit status" "$?" 0
	kb=$(cat rss)
	[ "$kb" -lt 204800 ] || fail "record's peak RSS ${kb} KiB for 2,000 short threads"
	"$ALLOCPROF" stats --json t.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	[ -s s.err ] && fail "stats warned: $(cat s.err)"
	n=$(jget s.json alloc_objects)
	expect_eq "alloc_objects = calls" "$n" "$(jget s.json calls)"
	[ "$n" -ge 6000 ] || fail "alloc_objects $n, want 6,000 or more"
	expect_eq "threads" "$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["thread_list"]))' s.json)" 2001
	;;
racing)
	# The process ends while four threads allocate: they run on until
	# the kernel ends them (milliseconds: the END is written meanwhile),
	# and what they allocate is in the trace as much as what came before
	# (it was lost: 0.1 to 1.5 M of 2 to 4 M allocations with _exit).
	# The program counts its allocations in a file: the trace holds that
	# many, give or take the one call each thread may be in when killed,
	# plus what the process allocates besides, measured by a run that
	# stops its threads first.
	count() { od -An -tu8 -N8 c | tr -d ' '; }
	"$ALLOCPROF" record -q --all -o j.trace "$PROGS/durable_race" c join
	expect_eq "exit status (join)" "$?" 0
	"$ALLOCPROF" stats --json j.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	base=$(( $(jget s.json alloc_objects) - $(count) ))
	[ "$base" -ge 0 ] && [ "$base" -le 16 ] || fail "join: alloc_objects - counted = $base"
	for how in _exit exit signal; do
		"$ALLOCPROF" record -q --all -o r.trace "$PROGS/durable_race" c $how
		st=$?
		case $how in signal) want=143 ;; *) want=0 ;; esac
		expect_eq "exit status ($how)" "$st" $want
		"$ALLOCPROF" stats --json r.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
		[ -s s.err ] && fail "stats warned: $(cat s.err)"
		n=$(jget s.json alloc_objects)
		expect_eq "truncated ($how)" "$(jget s.json truncated)" false
		d=$((n - $(count)))
		[ "$d" -ge "$base" ] && [ "$d" -le $((base + 4)) ] ||
			fail "$how: the trace holds $n allocations, the program counted $(count) (+$base besides)"
	done
	;;
exitsignal)
	# SIGTERM while exit() runs, as four threads allocate: it lands in
	# the sampler's own flush of their buffers (ap_fini), whose lock the
	# handler then waited for, 2000 sched_yields, each the others' time
	# slices on a shared CPU: 9 s on one CPU (0.2 s without the sampler;
	# 0.6-0.9 s since 326d5f1: a time, which the tests do not assert).
	# The process ends, its trace whole.
	count() { od -An -tu8 -N8 c | tr -d ' '; }
	one=
	taskset -c 0 true 2>/dev/null && one="taskset -c 0"
	$one "$ALLOCPROF" record -q --all -o x.trace "$PROGS/durable_race" c exitsignal
	st=$?
	[ "$st" = 0 ] || [ "$st" = 143 ] || fail "exit status $st"
	"$ALLOCPROF" stats --json x.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	[ -s s.err ] && fail "stats warned: $(cat s.err)"
	n=$(jget s.json alloc_objects)
	[ "$n" -ge "$(count)" ] || fail "the trace holds $n allocations, the program counted $(count)"
	;;
groupkilled)
	# record and its program killed together (kill -9 of the process
	# group): nobody finishes the trace, and its last chunks (the ring's,
	# the threads' buffers) are in the buffers file. The first report
	# that reads it finishes it: the allocations the program said it had
	# done are in it, it is not truncated, the buffers file is gone.
	setsid "$ALLOCPROF" record --all -o g.trace "$PROGS/durable_kill" >out 2>err &
	rec=$!
	started 20
	sleep 1
	kill -KILL -- "-$rec"
	wait "$rec"
	for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.01; done
	said=$(grep -v '^pid' out | tail -n 1)
	[ -e g.trace.buffers ] || fail "no buffers file left: nothing to finish (record: $(cat err))"
	# another report finishing it at the same time holds the buffers
	# file's lock (flock(1) stands in for it, for half a second, and
	# finishes nothing): this one waits for it, then finishes the trace
	# itself (it read the trace as it was: truncated, its last chunks
	# missing)
	flock g.trace.buffers sleep 0.5 &
	holder=$!
	sleep 0.1
	"$ALLOCPROF" stats --json g.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	wait "$holder"
	grep -q "g.trace: finished from the buffers file its process left" s.err ||
		fail "stats said: $(cat s.err)"
	n=$(jget s.json alloc_objects)
	[ "${n%.*}" -ge "$said" ] || fail "alloc_objects $n, the program said $said"
	expect_eq "truncated" "$(jget s.json truncated)" false
	expect_eq "end_reason" "$(jget s.json end_reason)" gone
	[ -e g.trace.buffers ] && fail "the buffers file is left"
	# and read again: as it is now, nothing more said
	"$ALLOCPROF" stats --json g.trace >s2.json 2>s2.err || fail "stats again: $(cat s2.err)"
	[ -s s2.err ] && fail "stats again said: $(cat s2.err)"
	expect_eq "alloc_objects again" "$(jget s2.json alloc_objects)" "$n"
	;;
pidnskilled)
	# the same with the program in a pid namespace of its own (pid 2
	# there, under sh): its buffers file names it by that pid, and pid 2
	# here is kthreadd, which runs for ever: the report never finished
	# its trace (truncated, the buffers file left). A pid's process is
	# the writer only if it has the buffers file mapped.
	unshare -p -f true 2>/dev/null || skip "unshare -p -f fails here (needs CAP_SYS_ADMIN)"
	setsid "$ALLOCPROF" record --all -o n.trace unshare -p -f sh -c '"$0" & wait' \
		"$PROGS/durable_kill" >out 2>err &
	rec=$!
	started 20
	sleep 0.5
	kill -KILL -- "-$rec"
	wait "$rec"
	for _ in $(seq 1 500); do pgrep -g "$rec" >/dev/null || break; sleep 0.02; done
	said=$(grep -v '^pid' out | tail -n 1)
	"$ALLOCPROF" stats --json --by-process n.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	got=$(jq s.json '[(p["alloc_objects"] >= '"$said"', p["end_reason"]) for p in j if p["argv"][0].endswith("durable_kill")]')
	expect_eq "the program's trace: all it said it allocated, an end" "$got" "[(True, 'gone')]"
	grep -q "finished from the buffers file its process left" s.err || fail "stats said: $(cat s.err)"
	;;
drainer)
	# A shell's child, exec'd while record does not look at the rings
	# (stopped): its sampler names record as its ring's drainer from
	# the start, as it names the program's parent, so that its END does
	# not wait for record's first look (~15 ms a process of a shell
	# script); and record, let go on, finishes the child's trace whole
	rm -f d.trace* go
	"$ALLOCPROF" record -o d.trace sh -c \
		'echo "pid $$"; while [ ! -e go ]; do sleep 0.01; done; "$0"; echo done' \
		"$PROGS/drainer_probe" >out 2>err &
	rec=$!
	started 0
	kill -STOP "$rec"
	touch go
	for _ in $(seq 1 1000); do
		grep -q "^drainer" out && break
		sleep 0.01
	done
	kill -CONT "$rec"
	wait "$rec"
	expect_eq "record's exit status" "$?" 0
	expect_eq "the probe's drainer" "$(sed -n 's/^drainer //p' out)" "$rec"
	"$ALLOCPROF" stats --json d.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	expect_eq "truncated" "$(jget s.json truncated)" false
	[ -s s.err ] && fail "stats warned: $(cat s.err)"
	;;
*)
	echo "unknown group $group"
	exit 2
	;;
esac
exit $failed
