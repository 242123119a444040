#!/usr/bin/env bash
# Tests of where `allocprof record` writes and what it leaves there (issue 9,
# brief 9c): traces of processes that outlive the program (finished once
# they are gone), output paths that are not trace files, checks made
# before the program starts, the END's status, a full disk and the file
# size limit, the symbols of a run's child traces kept in one run, a
# user's own allocator preloaded (issue 24). One argument picks the
# group. Environment (from meson): ALLOCPROF, TESTDATA_BUILD, FSIZE,
# USABLE.
group=$1
self=$(readlink -f "$0")
. "$(dirname "$self")/lib.sh"

# wait_gone PID: until the process has exited (at most 10 s).
wait_gone() {
	for _ in $(seq 1 1000); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.01
	done
	fail "process $1 did not exit"
}

case $group in
daemon)
	# The program forks a daemon and exits; the daemon allocates 2000
	# blocks after record has returned. record must leave the daemon's
	# trace alone, say where it is, and the trace must be complete once
	# the daemon exits: finished by record's finisher as record finishes
	# the others (no buffers file left, its symbols kept, compacted).
	"$ALLOCPROF" record --all -o d.trace "$TESTDATA_BUILD/daemon" 300 pid >out 2>err
	expect_eq "record exit status" "$?" 0
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	grep -q "child trace d.trace.$dpid: process $dpid is still running" err ||
		fail "record did not name the daemon's live trace: $(cat err)"
	fpid=$(sed -n 's/^allocprof: process \([0-9]*\) (allocprof record) finishes.*/\1/p' err)
	[ -n "$fpid" ] || fail "record did not name its finisher: $(cat err)"
	wait_gone "$dpid"
	[ -z "$fpid" ] || wait_gone "$fpid"
	[ ! -e "d.trace.$dpid.buffers" ] || fail "the daemon's buffers file is left"
	if "$ALLOCPROF" stats --json "d.trace.$dpid" >d.json 2>d.err; then
		[ "$(jget d.json symbols_kept)" -gt 0 ] ||
			fail "the daemon's trace keeps no symbols: $(cat d.json)"
		expect_eq "daemon: alloc_objects" "$(jget d.json alloc_objects)" 2000
		expect_eq "daemon: free_objects" "$(jget d.json free_objects)" 2000
		expect_eq "daemon: alloc_space" "$(jget d.json alloc_space)" 128000
		expect_eq "daemon: end_reason" "$(jget d.json end_reason)" exit
		expect_eq "daemon: truncated" "$(jget d.json truncated)" false
	else
		fail "stats of the daemon's trace: $(cat d.err)"
	fi
	# The program's own trace is finished as usual.
	grep -q "wrote d.trace " err || fail "no summary for the program's trace: $(cat err)"
	# A daemon that closes every descriptor (the sampler's too, and with
	# it the writer's lock) is still running, and its trace still open to
	# more: record must not rewrite it either.
	rm -f pid
	"$ALLOCPROF" record --all -o c.trace "$TESTDATA_BUILD/daemon" 300 pid closefds >out 2>err
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	grep -q "child trace c.trace.$dpid: process $dpid is still running" err ||
		fail "closefds: record did not name the daemon's trace: $(cat err)"
	fpid=$(sed -n 's/^allocprof: process \([0-9]*\) (allocprof record) finishes.*/\1/p' err)
	wait_gone "$dpid"
	[ -z "$fpid" ] || wait_gone "$fpid"
	[ ! -e "c.trace.$dpid.buffers" ] || fail "closefds: the daemon's buffers file is left"
	"$ALLOCPROF" stats --json "c.trace.$dpid" >c.json 2>c.err || fail "closefds: stats: $(cat c.err)"
	expect_eq "closefds: alloc_objects" "$(jget c.json alloc_objects)" 2000
	[ "$(jget c.json symbols_kept)" -gt 0 ] ||
		fail "closefds: the daemon's trace keeps no symbols: $(cat c.json)"
	# -q: no line, the trace finished all the same
	rm -f pid
	"$ALLOCPROF" record -q --all -o q.trace "$TESTDATA_BUILD/daemon" 300 pid >out 2>err
	[ -s err ] && fail "-q: record said $(cat err)"
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	wait_gone "$dpid"
	# (the finisher is done when the trace keeps its symbols)
	for _ in $(seq 1 100); do
		"$ALLOCPROF" stats --json "q.trace.$dpid" >q.json 2>/dev/null &&
			[ "$(jget q.json symbols_kept)" -gt 0 ] && break
		sleep 0.1
	done
	[ "$(jget q.json symbols_kept)" -gt 0 ] || fail "-q: the daemon's trace keeps no symbols"
	[ ! -e "q.trace.$dpid.buffers" ] || fail "-q: the daemon's buffers file is left"

	# A second record with the same -o while the first run's daemon
	# still writes its trace: that trace began before the second run and
	# is not the second run's child, whatever its name; only the first
	# run's finisher finishes it, once (two finishers appending its
	# buffers made a duplicated chunk), after a SIGKILL too.
	rm -f pid
	"$ALLOCPROF" record -q --all -o r.trace "$TESTDATA_BUILD/daemon" 3000 pid drip >out 2>err ||
		fail "drip: record failed: $(cat err)"
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	sleep 0.3
	"$ALLOCPROF" record --all -o r.trace "$TESTDATA_BUILD/exitcode" return 0 >out2 2>err2 ||
		fail "second record failed: $(cat err2)"
	grep -q "r.trace.$dpid" err2 && fail "the second record took the first run's daemon trace: $(cat err2)"
	sleep 0.5
	kill -9 "$dpid"
	wait_gone "$dpid"
	for _ in $(seq 1 100); do
		"$ALLOCPROF" stats --json "r.trace.$dpid" >r.json 2>r.err &&
			[ "$(jget r.json symbols_kept)" -gt 0 ] && break
		sleep 0.1
	done
	"$ALLOCPROF" stats --json "r.trace.$dpid" >r.json 2>r.err ||
		fail "drip: stats of the killed daemon's trace: $(cat r.err)"
	[ "$(jget r.json symbols_kept)" -gt 0 ] || fail "drip: the killed daemon's trace keeps no symbols"
	[ "$(jget r.json end_reason)" = killed ] || [ "$(jget r.json end_reason)" = gone ] ||
		fail "drip: end_reason $(jget r.json end_reason)"
	[ ! -e "r.trace.$dpid.buffers" ] || fail "drip: the daemon's buffers file is left"
	"$ALLOCPROF" stats r.trace >/dev/null 2>r.err || fail "drip: stats of the second run: $(cat r.err)"

	# One process at a time finishes a trace from its buffers file (its
	# flock): the finisher leaves a trace another one is finishing alone.
	rm -f pid
	"$ALLOCPROF" record -q --all -o x.trace "$TESTDATA_BUILD/daemon" 3000 pid drip >out 2>err ||
		fail "busy: record failed: $(cat err)"
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	sleep 0.3
	flock -x "x.trace.$dpid.buffers" sleep 3 &
	holder=$!
	sleep 0.2
	kill -9 "$dpid"
	wait_gone "$dpid"
	before=$(stat -c %s "x.trace.$dpid")
	sleep 1 # (the finisher looks every 200 ms)
	[ -e "x.trace.$dpid.buffers" ] && [ "$(stat -c %s "x.trace.$dpid")" = "$before" ] ||
		fail "busy: the finisher finished a trace another process was finishing"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null

	# The finisher keeps none of record's descriptors but its lock, at
	# any number: a caller's pipe at 1500 would keep its reader waiting
	# for the daemon's whole life.
	rm -f pid
	bash -c 'exec 1500>/dev/null; exec "$0" record --all -o h.trace "$1" 3000 pid' \
		"$ALLOCPROF" "$TESTDATA_BUILD/daemon" >out 2>err || fail "high fd: record failed: $(cat err)"
	fpid=$(sed -n 's/^allocprof: process \([0-9]*\) (allocprof record) finishes.*/\1/p' err)
	for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
	dpid=$(cat pid)
	if [ -z "$fpid" ] || ! kill -0 "$dpid" 2>/dev/null; then
		fail "high fd: no finisher named, or the daemon gone already: $(cat err)"
	else
		fds=$(ls /proc/"$fpid"/fd | sort -n | tr '\n' ' ')
		[ -e /proc/"$fpid"/fd/1500 ] && fail "high fd: the finisher keeps descriptor 1500 ($fds)"
		# its standard ones on /dev/null, the run's lock, and the
		# daemon's trace it drains the ring of (drain.c): its own
		n=0
		for f in /proc/"$fpid"/fd/*; do
			case "$(readlink "$f")" in */h.trace.*) ;; *) n=$((n + 1)) ;; esac
		done
		[ "$n" -le 4 ] || fail "high fd: the finisher keeps $fds"
	fi
	wait_gone "$dpid"

	# A daemon SIGKILLed whose pid another process takes (in a pid
	# namespace of our own, where the next pid can be set) is gone all
	# the same: the finisher finishes its trace while the other runs.
	if unshare -Urpf --mount-proc true 2>/dev/null; then
		rm -f pid
		unshare -Urpf --mount-proc bash -c '
			"$0" record -q --all -o k.trace "$1" 5000 pid drip >out 2>err || exit 1
			for _ in $(seq 1 200); do [ -s pid ] && break; sleep 0.01; done
			sleep 0.3
			dpid=$(cat pid)
			kill -9 "$dpid"
			while kill -0 "$dpid" 2>/dev/null; do wait -n 2>/dev/null; sleep 0.01; done
			echo $((dpid - 1)) >/proc/sys/kernel/ns_last_pid
			sleep 20 &
			[ $! = "$dpid" ] || { echo "pid $! taken, not $dpid" >reuse.err; kill $!; exit 0; }
			for _ in $(seq 1 100); do [ -e "k.trace.$dpid.buffers" ] || break; sleep 0.1; done
			[ -e "k.trace.$dpid.buffers" ] && echo "the killed daemon'"'"'s trace is left unfinished while pid $dpid is another process'"'"'s" >reuse.err
			kill $!
			for _ in $(seq 1 100); do "$0" stats "k.trace.$dpid" >/dev/null 2>&1 && break; sleep 0.1; done
			"$0" stats "k.trace.$dpid" >/dev/null 2>>reuse.err
			true' "$ALLOCPROF" "$TESTDATA_BUILD/daemon" || fail "pid reused: record failed: $(cat err)"
		[ -s reuse.err ] && fail "pid reused: $(cat reuse.err)"
	fi
	;;
chunks)
	# testdata/threads: 4 threads, 8000 allocations. A duplicated EVENTS
	# chunk would make 10000 of them, a deleted one 6000: the reader must
	# refuse both and say where, in the trace as record leaves it
	# (compacted) and as the sampler writes it.
	for level in default 0; do
		if [ $level = default ]; then
			"$ALLOCPROF" record -q --all -o th.trace "$TESTDATA_BUILD/threads" >/dev/null 2>&1
		else
			ALLOCPROF_COMPACT_LEVEL=0 "$ALLOCPROF" record -q --all -o th.trace \
				"$TESTDATA_BUILD/threads" >/dev/null 2>&1
		fi
		"$ALLOCPROF" stats --json th.trace >th.json 2>th.err || fail "stats: $(cat th.err)"
		n=$(jget th.json alloc_objects)
		[ "$n" -ge 8000 ] || fail "level $level: alloc_objects $n < 8000"
		# bad.trace: th.trace with its second EVENTS chunk twice or
		# gone; $at: the offset the reader must name
		for mode in dup del; do
			at=$(/usr/bin/python3 - th.trace "$mode" bad.trace <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
hl = 24 if struct.unpack_from('<I', d, 8)[0] < 3 else 32
chunks, o = [], 16
while o + hl <= len(d):
    n = struct.unpack_from('<I', d, o + 12)[0]
    chunks.append((o, d[o + 4], hl + n, struct.unpack_from('<I', d, o + 20)[0]))
    o += hl + n
ev = [c for c in chunks if c[1] == 3]
o, _, n, stream = ev[1]
if sys.argv[2] == 'dup':
    out = d[:o + n] + d[o:o + n] + d[o + n:]
    at = o + n
    print(at, 'dup')
else:
    out = d[:o] + d[o + n:]
    # the next chunk of its stream names what it misses; without one, the
    # END (the last chunk, type 4) does (which it is depends on how the
    # threads' buffers filled)
    later = [c for c in chunks if c[0] > o and c[1] == 3 and c[3] == stream]
    if later:
        print(later[0][0] - n, 'next')
    else:
        print([c for c in chunks if c[1] == 4][-1][0] - n, 'end')
open(sys.argv[3], 'wb').write(out)
PY
)
			if "$ALLOCPROF" stats --json bad.trace >bad.json 2>bad.err; then
				fail "level $level, $mode: stats read it: alloc_objects $(jget bad.json alloc_objects)"
				continue
			fi
			read -r at kind <<<"$at"
			case $kind in
			dup) want="corrupt chunk at byte $at: duplicated chunk: chunk 0 of stream" ;;
			next) want="corrupt chunk at byte $at: missing chunk: chunk" ;;
			end) want="corrupt chunk at byte $at: missing chunks" ;;
			esac
			grep -q "bad.trace: $want" bad.err || fail "level $level, $mode: $(cat bad.err), want '$want'"
		done
	done
	;;
output)
	# -o never removes what is not a trace: a device node (here a twin of
	# /dev/null: the real one must not be put at risk), a FIFO, a
	# directory, a file that holds something else. /dev/null under any
	# name discards the trace; a symbolic link is followed and kept.
	prog="$TESTDATA_BUILD/single"
	mknod null c 1 3 || fail "mknod"
	"$ALLOCPROF" record --all -o null "$prog" >out 2>err
	expect_eq "-o null: exit status" "$?" 0
	[ -c null ] || fail "-o null: the device node was replaced: $(ls -l null)"
	grep -q "trace discarded" err || fail "-o null: $(cat err)"
	ls null.* >/dev/null 2>&1 && fail "-o null: child traces next to it: $(ls null.*)"
	# forkexec's child and the image it execs are discarded too
	"$ALLOCPROF" record -q --all -o null "$TESTDATA_BUILD/forkexec" >/dev/null 2>&1
	[ -c null ] || fail "-o null, forkexec: the device node was replaced"
	ls null.* >/dev/null 2>&1 && fail "-o null, forkexec: child traces: $(ls null.*)"

	echo "my notes" >notes.txt
	mkfifo fifo
	mkdir dir
	for target in notes.txt fifo dir; do
		"$ALLOCPROF" record -o "$target" "$prog" >out 2>err
		expect_eq "-o $target: exit status" "$?" 1
		[ -s out ] && fail "-o $target: the program ran: $(cat out)"
		expect_eq "-o $target: stderr lines" "$(wc -l <err)" 1
		grep -q "^allocprof: $target: is .*: not overwritten" err || fail "-o $target: $(cat err)"
	done
	expect_eq "-o notes.txt: contents" "$(cat notes.txt)" "my notes"
	# -o - is standard output to the other commands: refused, not a
	# file named "-" (for the program run, and for an attach)
	for args in "$prog" "-p $$"; do
		"$ALLOCPROF" record -o - $args >out 2>err
		expect_eq "-o - $args: exit status" "$?" 1
		[ -s out ] && fail "-o - $args: the program ran or wrote: $(cat out)"
		[ -e ./- ] && fail "-o - $args: made a file named '-'"
		expect_eq "-o - $args: stderr" "$(cat err)" \
			"allocprof: -o -: a trace cannot go to standard output (its child traces are named after its file): give a path (./- for a file named '-')"
	done
	[ -p fifo ] || fail "-o fifo: the FIFO was replaced"

	# a trace, and an empty file, are overwritten
	"$ALLOCPROF" record -q --all -o again.trace "$prog" >/dev/null 2>&1
	"$ALLOCPROF" record -q --all -o again.trace "$prog" >/dev/null 2>&1
	expect_eq "-o again.trace: exit status" "$?" 0
	: >empty.trace
	"$ALLOCPROF" record -q --all -o empty.trace "$prog" >/dev/null 2>&1
	for t in again empty; do
		"$ALLOCPROF" stats --json $t.trace >$t.json 2>/dev/null || fail "$t: stats failed"
		expect_eq "$t: alloc_objects" "$(jget $t.json alloc_objects)" 1221
	done

	# a symbolic link: the trace goes where it points, the link stays
	mkdir store
	ln -s store/real.trace link.trace
	"$ALLOCPROF" record --all -o link.trace "$prog" >/dev/null 2>err
	[ -L link.trace ] || fail "-o link.trace: the link was replaced"
	if "$ALLOCPROF" stats --json store/real.trace >real.json 2>/dev/null; then
		expect_eq "link: alloc_objects" "$(jget real.json alloc_objects)" 1221
	else
		fail "-o link.trace: no trace where it points: $(cat err)"
	fi
	;;
precheck)
	# What would make the program run unprofiled is found before it runs,
	# in one line: a missing or unwritable output directory, a sampler
	# path LD_PRELOAD would split.
	prog="$TESTDATA_BUILD/single"
	"$ALLOCPROF" record -o missing/t.trace "$prog" >out 2>err
	expect_eq "missing dir: exit status" "$?" 1
	[ -s out ] && fail "missing dir: the program ran"
	expect_eq "missing dir: stderr" "$(cat err)" \
		"allocprof: missing: cannot write the trace there: No such file or directory"
	# As nobody (root writes anywhere), with copies of record, the sampler
	# and the program that nobody can run: the build may sit in a
	# directory of root's alone (a clone in /root).
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
		chmod 755 "$work"
		mkdir bin && cp "$ALLOCPROF" "$prog" \
			"$(dirname "$(dirname "$ALLOCPROF")")/sampler/liballocprof.so" bin/ &&
			chmod -R a+rX bin
		prog_root=$prog ap_root=$ALLOCPROF
		prog=$work/bin/$(basename "$prog")
		ALLOCPROF=$work/bin/$(basename "$ALLOCPROF")
		export ALLOCPROF_PRELOAD=$work/bin/liballocprof.so
		mkdir ro && chmod 555 ro
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$ALLOCPROF" record -o ro/t.trace "$prog" >out 2>err
		expect_eq "read-only dir: exit status" "$?" 1
		[ -s out ] && fail "read-only dir: the program ran"
		expect_eq "read-only dir: stderr" "$(cat err)" \
			"allocprof: ro: cannot write the trace there: Permission denied"
		# the default output goes in the current directory
		(cd ro && setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$ALLOCPROF" record "$prog" >../out 2>../err)
		expect_eq "read-only cwd: exit status" "$?" 1
		[ -s out ] && fail "read-only cwd: the program ran"
		grep -q "^allocprof: .*/ro: cannot write the trace there: Permission denied$" err ||
			fail "read-only cwd: $(cat err)"
		prog=$prog_root ALLOCPROF=$ap_root
		unset ALLOCPROF_PRELOAD
	fi
	so="$(dirname "$(dirname "$ALLOCPROF")")/sampler/liballocprof.so"
	for dir in "with space" "with:colon"; do
		mkdir "$dir"
		cp "$so" "$dir/"
		ALLOCPROF_PRELOAD="$work/$dir/liballocprof.so" "$ALLOCPROF" record -o t.trace "$prog" >out 2>err
		expect_eq "sampler in '$dir': exit status" "$?" 1
		[ -s out ] && fail "sampler in '$dir': the program ran"
		expect_eq "sampler in '$dir': stderr lines" "$(wc -l <err)" 1
		grep -q "LD_PRELOAD cannot name this path" err || fail "sampler in '$dir': $(cat err)"
	done
	;;
status)
	# END says how the program ended and with which status, and stats
	# says what END says; without END it says only what is known.
	for how in return exit; do
		for n in 0 1 3; do
			"$ALLOCPROF" record -q --all -o s.trace "$TESTDATA_BUILD/exitcode" $how $n
			expect_eq "$how $n: exit status" "$?" "$n"
			"$ALLOCPROF" stats --json s.trace >s.json 2>s.err || fail "$how $n: $(cat s.err)"
			expect_eq "$how $n: end_reason" "$(jget s.json end_reason)" exit
			expect_eq "$how $n: end_status" "$(jget s.json end_status)" "$n"
			"$ALLOCPROF" stats s.trace >s.txt 2>&1
			grep -q "^ended  *exit, status $n$" s.txt || fail "$how $n: $(grep ended s.txt)"
		done
	done
	# SIGKILL: record finishes the trace from the sampler's buffers and
	# ends it as killed (the counts the sampler kept are gone with it)
	"$ALLOCPROF" record --all -o k.trace sh -c 'kill -KILL $$' 2>err
	grep -q "the process was killed by a signal it cannot catch" err ||
		fail "SIGKILL: record said: $(cat err)"
	"$ALLOCPROF" stats k.trace >k.txt 2>&1
	grep -q "^ended  *killed by signal 9 (SIGKILL)" k.txt ||
		fail "SIGKILL: stats says: $(grep ended k.txt)"
	grep -q "^calls " k.txt && fail "SIGKILL: stats claims to know the calls: $(cat k.txt)"
	[ -e k.trace.buffers ] && fail "SIGKILL: the buffers file is left"
	;;
laterun)
	# A daemon of a first run outlives it; a second record takes the same
	# -o; then the daemon forks a child, and ends by exec'ing another
	# image. Both traces begin in the second run's time, but are the
	# first run's (HEADER run_pid): the second record neither finishes
	# nor counts them, its reports do not read them, and the first
	# record's finisher finishes them.
	"$ALLOCPROF" record -o l.trace bash -c 'setsid bash -c "echo \$\$ >dpid
		until [ -e go ]; do sleep 0.05; done
		( echo \$BASHPID >late; exec /usr/bin/true )
		exec touch done" >/dev/null 2>&1 </dev/null &' 2>errA
	fpid=$(sed -n 's/^allocprof: process \([0-9]*\) (allocprof record) finishes.*/\1/p' errA)
	[ -n "$fpid" ] || fail "the first record names no finisher: $(cat errA)"
	for _ in $(seq 1 200); do [ -s dpid ] && break; sleep 0.01; done
	"$ALLOCPROF" record -o l.trace bash -c 'touch go; until [ -e done ]; do sleep 0.05; done' \
		2>errB
	dpid=$(cat dpid) late=$(cat late)
	[ -n "$dpid" ] && [ -n "$late" ] || fail "the daemon did not run"
	! grep -q -e "l.trace.$late\b" -e "l.trace.$dpid\b" errB ||
		fail "the second record finished the first run's traces: $(cat errB)"
	"$ALLOCPROF" stats --by-process l.trace >b.txt 2>&1 || fail "stats: $(cat b.txt)"
	! grep -q -e "^command  *touch done" -e "^command  */usr/bin/true" b.txt ||
		fail "the second run's reports read the first run's traces: $(cat b.txt)"
	wait_gone "$dpid"
	[ -z "$fpid" ] || wait_gone "$fpid"
	# (the daemon's bash ends by exec: with an END of its own if it
	# recorded something, and touch in .exec1; else touch took its trace)
	for f in "l.trace.$late" "l.trace.$dpid" l.trace.$dpid.exec*; do
		[ -e "$f" ] || continue
		[ ! -e "$f.buffers" ] || fail "$f: its buffers file is left"
		"$ALLOCPROF" stats --json "$f" >f.json 2>f.err || fail "$f: $(cat f.err)"
		case $(jget f.json end_reason) in
		exit | exec) ;;
		*) fail "$f: end_reason $(jget f.json end_reason)" ;;
		esac
	done
	;;
heap)
	# The sampler's own blocks come from no heap of the program's: its
	# start (the loader's blocks for libunwind's dlopen) made the main
	# arena and the main thread's tcache before main (the first malloc
	# of main then added 0 bytes in use, not 688), and under --all a
	# thread's first allocation is its first unwind, whose libunwind
	# thread-local block took 32 bytes and moved the thread's next
	# aligned block (usable 104 for 72). The program sees, in either
	# thread and either mode, what it sees without us.
	native=$("$HEAPSHIFT")
	sampled=$("$ALLOCPROF" record -q -o s.trace "$HEAPSHIFT")
	all=$("$ALLOCPROF" record -q --all -o a.trace "$HEAPSHIFT")
	expect_eq "sampled" "$sampled" "$native"
	expect_eq "--all" "$all" "$native"
	# and after a sample mid-run, in either thread: the sampler's first
	# unwind (libunwind's first trace) is made at its start, not at the
	# first sample, and a thread's own first (its thread-local block)
	# takes a block of the sampler's, not of the program's heap, where
	# the program's next aligned blocks were split around it
	# (memalign(64, 1870): 1880 usable, not 1912)
	native=$("$HEAPSHIFT" loop thread)
	for rate in 1024 4096 16384 65536 262144 524288; do
		sampled=$("$ALLOCPROF" record -q --rate $rate -o s.trace "$HEAPSHIFT" loop thread)
		expect_eq "loop, sampled at $rate" "$(echo "$sampled" | md5sum)" "$(echo "$native" | md5sum)"
	done
	# and the program's allocations are still all recorded, none of ours
	# (valgrind: 6 allocs: printf's buffer, pthread_create's thread
	# block, four of its own)
	"$ALLOCPROF" stats --json a.trace >a.json 2>a.err || fail "stats: $(cat a.err)"
	expect_eq "--all: calls" "$(jget a.json calls)" 6
	expect_eq "--all: allocations" "$(jget a.json alloc_objects)" 6
	;;
ctorthread)
	# A thread a library's constructor started runs while the sampler
	# starts; the blocks it gets then are the program's. Every call it
	# makes is either logged and replayed by the start or recorded live
	# once the sampler is on: nothing in use at the end but what the
	# program leaves (the DTV of the thread it joined, freed only by
	# glibc's freeres: valgrind --run-libc-freeres=no counts 1 block),
	# no unmatched free. While the start closed the log before it turned
	# on, the calls of that window were lost: 1 to 42 blocks "in use" and
	# up to 1,024 unmatched frees, 4 --all runs in 5. While the start served
	# its own blocks from the sampler's arena, that thread got them too:
	# 84,000 and 193,000 in use in 2 runs of 10. Sampled at 64 bytes a
	# lost free is a live sample left: no more than the blocks in use.
	# (ten runs in each mode: the thread must run while the sampler
	# starts)
	# valgrind runs one thread at a time: with its default lock (a
	# pipe) the constructor's thread, which makes no system call, takes
	# the lock back as it lets it go, and main, woken from its 20 ms
	# sleep on the other CPU, waited for it 0.05 to 55 s in CI runs (the
	# thread's "calls" at the end: 48,674 to 46,763,070) and once past
	# the test's 120 s; a fair lock hands it over in turn
	left=1
	if command -v valgrind >/dev/null; then
		valgrind --fair-sched=try --run-libc-freeres=no "$CTOR_THREAD" 2>vg.err
		left=$(sed -n 's/.*in use at exit: [0-9,]* bytes in \([0-9,]*\) blocks/\1/p' vg.err | tr -d ,)
	fi
	for i in $(seq 10); do
		for mode in --all "--rate 64"; do
			rm -f c.trace*
			out=$("$ALLOCPROF" record -q $mode -o c.trace "$CTOR_THREAD") ||
				fail "record $mode, run $i"
			"$ALLOCPROF" stats --json c.trace >c.json 2>c.err ||
				{ fail "stats: $(cat c.err)"; continue; }
			expect_eq "$mode run $i: unmatched frees" "$(jget c.json unmatched_frees)" 0
			if [ "$mode" = --all ]; then
				expect_eq "run $i: blocks in use at the end" \
					"$(jget c.json inuse_objects)" "$left"
				# each allocation and realloc the thread made once
				# (a realloc that failed, none), logged or live
				"$ALLOCPROF" top --alloc_objects --json c.trace >top.json
				expect_eq "run $i: the thread's allocations" \
					"calls $(jq top.json '[r["flat"] for r in j["rows"] if r["name"] == "churn"][0]')" "$out"
			else
				[ "$(jget c.json inuse_samples)" -le "$left" ] ||
					fail "$mode run $i: $(jget c.json inuse_samples) live samples at the end"
			fi
		done
	done
	# The thread forks while the sampler starts: every child has its
	# trace, with its 100 allocations. While the fork handlers were
	# registered once the trace was open, the children forked before
	# had none (about half of them), and lived on with the early log.
	for i in $(seq 4); do
		for mode in --all "--rate 64"; do
			rm -f c.trace*
			out=$(CTOR_THREAD_FORKS=1 "$ALLOCPROF" record -q $mode -o c.trace "$CTOR_THREAD") ||
				fail "record $mode with forks, run $i"
			forks=$(echo "$out" | sed -n 's/^forks \([0-9]*\) failed 0$/\1/p')
			[ -n "$forks" ] && [ "$forks" -gt 0 ] || { fail "$mode run $i: $out"; continue; }
			expect_eq "$mode run $i: child traces" "$(ls c.trace.* | wc -l)" "$forks"
			if [ "$mode" = --all ]; then
				for t in c.trace.*; do
					"$ALLOCPROF" stats --json "$t" >k.json 2>k.err ||
						{ fail "stats $t: $(cat k.err)"; continue; }
					expect_eq "run $i: $t's allocations" "$(jget k.json alloc_objects)" 100
				done
			fi
		done
	done
	;;
symbols)
	# The child traces of a run keep their symbols through one
	# `allocprof symbols` for all of them, which opens each file once
	# (libc at another address in every process): as many files for 6
	# children as for 2. And what it keeps is what each trace alone gets.
	for n in 2 6; do
		ALLOCPROF_TEST_OPENED=1 "$ALLOCPROF" record -q --all -o s$n.trace bash -c \
			"for i in \$(seq $n); do '$TESTDATA_BUILD/single' >/dev/null; done" 2>s$n.err
		kids=$(ls s$n.trace.* | wc -l)
		[ "$kids" -ge "$n" ] || fail "$n children: $kids child traces"
		grep -q "^allocprof: symbols: $kids traces, " s$n.err ||
			fail "$n children: the $kids child traces did not keep their symbols in one run: $(cat s$n.err)"
		[ "$(grep -c "^allocprof: symbols: " s$n.err)" -le 2 ] ||
			fail "$n children: more than the program's and one for its children: $(cat s$n.err)"
		opened[$n]=$(sed -n "s/^allocprof: symbols: $kids traces, \([0-9]*\) files opened/\1/p" s$n.err)
	done
	expect_eq "files opened for 6 children (as for 2)" "${opened[6]}" "${opened[2]}"
	"$ALLOCPROF" record -q --all --no-symbols -o ns.trace bash -c \
		"for i in 1 2 3; do '$TESTDATA_BUILD/single' >/dev/null; done"
	mkdir -p one all
	cp ns.trace.* all/
	last=$(ls ns.trace.* | tail -1)
	cp "$last" one/
	"$ALLOCPROF" symbols -q one/"$last" || fail "symbols of one trace"
	"$ALLOCPROF" symbols -q all/ns.trace.* || fail "symbols of all the traces"
	expect_eq "one trace's frames, alone and with the run's" \
		"$("$ALLOCPROF" top --lines all/"$last" 2>&1)" "$("$ALLOCPROF" top --lines one/"$last" 2>&1)"
	[ "$("$ALLOCPROF" stats --json one/"$last" | grep symbols_kept)" != '  "symbols_kept": 0,' ] ||
		fail "the trace keeps no symbols"
	# A trace copied in part, cut exactly where its symbols start: every
	# chunk before is whole, so only the END's count of the SYMBOLS
	# chunks after it tells; the views say it as any other cut (one
	# warning line, exit 0). Kept by record, and by `allocprof symbols`
	# later; a trace that never kept them (--no-symbols) is not cut.
	"$ALLOCPROF" record -q --all -o k.trace "$TESTDATA_BUILD/single" >/dev/null ||
		fail "record k.trace"
	symbols_at() { # the offset of the first SYMBOLS chunk, or the size
		"$_lib_py" -c '
import sys
d = open(sys.argv[1], "rb").read()
o = 16  # the preamble; chunks: 32-byte header, type at 4, length at 12
while o < len(d) and d[o + 4] != 5:
    o += 32 + int.from_bytes(d[o + 12 : o + 16], "little")
print(o)' "$1"
	}
	for tr in k.trace one/"$last"; do
		at=$(symbols_at "$tr")
		[ "$at" -lt "$(stat -c %s "$tr")" ] || fail "$tr: no SYMBOLS chunk"
		head -c "$at" "$tr" >cut.trace
		"$ALLOCPROF" top cut.trace >cut.out 2>cut.err
		expect_eq "$tr cut before its symbols: top's exit" "$?" 0
		expect_eq "$tr cut before its symbols: stderr" "$(cat cut.err)" \
			"allocprof: warning: cut.trace: truncated trace (the file ends at byte $at, before its symbols (0 of 1 SYMBOLS chunks): it was cut, and its frames are named from the program's files, where they still are); showing its complete part"
		grep -q '  main$' cut.out || fail "$tr cut before its symbols: no main row: $(cat cut.out)"
		"$ALLOCPROF" top "$tr" >/dev/null 2>whole.err
		[ -s whole.err ] && fail "$tr whole: $(cat whole.err)"
	done
	"$ALLOCPROF" stats --no-children ns.trace >ns.out 2>ns.err
	grep -q '^truncated  *no$' ns.out && [ ! -s ns.err ] ||
		fail "--no-symbols and never kept: read as cut: $(cat ns.out ns.err)"
	;;
preload)
	# A user's LD_PRELOAD of an allocator that defines the malloc family
	# at glibc's version but not as the default one (libc_malloc_debug.so:
	# malloc@GLIBC_2.2.5): the program's calls reach it, and so must the
	# sampler's (dlsym alone finds libc.so's behind it). With
	# MALLOC_CHECK_=3 its blocks are malloc-check's: the program sees the
	# same usable sizes under record, sampled and --all.
	dbg=/usr/lib/x86_64-linux-gnu/libc_malloc_debug.so.0
	[ -e "$dbg" ] || { echo "no $dbg (glibc before 2.34): skipped"; exit 77; }
	native=$(LD_PRELOAD=$dbg MALLOC_CHECK_=3 "$USABLE")
	case $native in
	"malloc 10 "*) ;;
	*) fail "natively under malloc-check: $native" ;;
	esac
	for mode in sampled --all; do
		opt=$([ $mode = --all ] && echo --all)
		under=$(LD_PRELOAD=$dbg MALLOC_CHECK_=3 "$ALLOCPROF" record -q $opt -o u.trace \
			"$USABLE")
		expect_eq "$mode: under record" "$under" "$native"
	done
	# the same calls recorded as on glibc's malloc (whose usable sizes
	# of aligned blocks depend on where the heap stands, which the
	# sampler's own blocks move: not compared)
	"$ALLOCPROF" record -q --all -o g.trace "$USABLE" >/dev/null
	"$ALLOCPROF" stats --json u.trace >u.json 2>u.err || fail "stats: $(cat u.err)"
	"$ALLOCPROF" stats --json g.trace >g.json 2>g.err || fail "stats: $(cat g.err)"
	expect_eq "--all: the calls recorded" "$(jget u.json calls)" "$(jget g.json calls)"
	# an allocator without symbol versions (jemalloc: what dlvsym alone
	# passes over), alone and before or after the debug library: the
	# first in the search order is the program's, and the sampler's
	je=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	if [ -e "$je" ]; then
		for pre in "$je" "$je:$dbg" "$dbg:$je"; do
			native=$(LD_PRELOAD=$pre MALLOC_CHECK_=3 "$USABLE")
			for mode in sampled --all; do
				opt=$([ $mode = --all ] && echo --all)
				under=$(LD_PRELOAD=$pre MALLOC_CHECK_=3 "$ALLOCPROF" record -q $opt \
					-o j.trace "$USABLE")
				expect_eq "$pre $mode: under record" "$under" "$native"
			done
		done
	else
		echo "no $je: the jemalloc part skipped (make check installs it)"
	fi
	;;
fsize)
	# The program's file size limit (ulimit -f 64: 64 KiB) is smaller
	# than the trace would be: the program runs exactly as without us
	# (the sampler's writes past the limit send it no SIGXFSZ, its own
	# get theirs), the trace holds the events that fit (chunks made small
	# enough to fit many), and record says the limit stopped it.
	native=$( (ulimit -f 64; "$FSIZE" 100000 own.native); echo "exit $?")
	expect_eq "native run" "$native" \
		"allocations 100000, wrote 65536 then -1 (File too large), SIGXFSZ 1
exit 3"
	under=$( (ulimit -f 64; "$ALLOCPROF" record --all -o f.trace "$FSIZE" 100000 own.rec \
		2>err); echo "exit $?")
	expect_eq "under record" "$under" "$native"
	grep -q "f.trace: File too large: the trace ends here; the program goes on" err ||
		fail "the sampler did not say the trace ended: $(cat err)"
	grep -q "truncated: the trace reached the file size limit (RLIMIT_FSIZE, 65536 bytes" err ||
		fail "record did not say the file size limit stopped the trace: $(cat err)"
	if "$ALLOCPROF" stats --json f.trace >f.json 2>f.err; then
		expect_eq "truncated" "$(jget f.json truncated)" true
		n=$(jget f.json alloc_objects)
		[ "$n" -ge 1000 ] && [ "$n" -lt 100000 ] ||
			fail "alloc_objects $n: not the events that fit under the limit"
	else
		fail "the trace does not read: $(cat f.err)"
	fi
	[ ! -e f.trace.buffers ] || fail "the buffers file is left"
	# The trace itself says why it stops (END reason "stopped", record
	# added it): a report read later, elsewhere, blames no SIGKILL. Also
	# when the program lowered its own limit, which record's is not.
	stats_says_fsize() {
		"$ALLOCPROF" stats --json "$1" >"$1.json" 2>"$1.err" || fail "$1: $(cat "$1.err")"
		expect_eq "$1: end_reason" "$(jget "$1.json" end_reason)" stopped
		"$ALLOCPROF" stats "$1" >"$1.txt" 2>&1 || fail "$1: stats failed: $(cat "$1.txt")"
		grep -q "^ended  *not recorded: the trace stopped at a chunk that did not fit (File too large: the file size limit, RLIMIT_FSIZE" "$1.txt" ||
			fail "$1: stats does not say the file size limit stopped it: $(cat "$1.txt")"
		! grep -q SIGKILL "$1.txt" || fail "$1: stats blames a SIGKILL: $(cat "$1.txt")"
	}
	stats_says_fsize f.trace
	# The program lowers its own limit once it runs (record's stays as it
	# was): the trace's chunks are record's to write (the ring), under
	# record's limit: the trace is whole, and nothing is said
	native=$("$FSIZE" 20000 own2.native 64; echo "exit $?")
	under=$("$ALLOCPROF" record --all -o g.trace "$FSIZE" 20000 own2.rec 64 2>err2; echo "exit $?")
	expect_eq "own limit: under record" "$under" "$native"
	! grep -q "truncated\|the trace ends here" err2 ||
		fail "own limit: the trace stopped: $(cat err2)"
	if "$ALLOCPROF" stats --json g.trace >g.json 2>g.err; then
		expect_eq "own limit: end_reason" "$(jget g.json end_reason)" exit
		expect_eq "own limit: truncated" "$(jget g.json truncated)" false
		n=$(jget g.json alloc_objects)
		[ "$n" -ge 20000 ] || fail "own limit: alloc_objects $n: not the whole run's"
	else
		fail "own limit: the trace does not read: $(cat g.err)"
	fi
	;;
diskfull)
	# The disk fills up while the program runs, then has room again: the
	# trace must read, holding its chunks up to the first that did not
	# fit. A small tmpfs of its own, in a mount namespace of its own.
	if [ -z "${OUTPUT_SH_NS:-}" ]; then
		[ "$(id -u)" = 0 ] && command -v unshare >/dev/null || exit 77
		# a chroot whose root is no mount point, a container without
		# CAP_SYS_ADMIN: no mount namespace to be had
		if ! unshare -m true 2>/dev/null; then
			echo "no mount namespace here (unshare -m fails): skipped"
			exit 77
		fi
		OUTPUT_SH_NS=1 unshare -m bash "$self" diskfull
		exit $?
	fi
	mkdir mnt
	mount -t tmpfs -o size=1m tmpfs mnt 2>/dev/null || exit 77
	for level in default 0; do
		rm -f mnt/*
		if [ $level = default ]; then
			"$ALLOCPROF" record --all -o mnt/t.trace "$TESTDATA_BUILD/diskfull" mnt/filler \
				>out 2>err
		else
			ALLOCPROF_COMPACT_LEVEL=0 "$ALLOCPROF" record --all -o mnt/t.trace \
				"$TESTDATA_BUILD/diskfull" mnt/filler >out 2>err
		fi
		expect_eq "level $level: exit status" "$?" 0
		expect_eq "level $level: output" "$(cat out)" "diskfull: filled"
		grep -q "t.trace: No space left on device: the trace ends here" err ||
			fail "level $level: the sampler did not say: $(cat err)"
		if "$ALLOCPROF" stats --json mnt/t.trace >s.json 2>s.err; then
			expect_eq "level $level: truncated" "$(jget s.json truncated)" true
			n=$(jget s.json alloc_objects)
			[ "$n" -ge 1000 ] && [ "$n" -le 20000 ] ||
				fail "level $level: alloc_objects $n: not the first phase's"
		else
			fail "level $level: the trace does not read: $(cat s.err)"
		fi
	done
	umount mnt
	;;
raw)
	# Once the compacted trace has taken its name, record cuts the trace
	# as the sampler wrote it (no name left) to free its pages while the
	# symbols are kept (cli/record/finish.c, while_symbols): never while
	# another process holds it, as a follower would (tui --follow maps
	# it). A reader that opened it while the program ran keeps its bytes.
	"$ALLOCPROF" record --all -o r.trace sleep 1 >out 2>err &
	rpid=$!
	for _ in $(seq 1 500); do [ -s r.trace ] && break; sleep 0.01; done
	exec 3<r.trace
	wait $rpid
	expect_eq "record exit status" "$?" 0
	held=$(stat -L -c %s /proc/self/fd/3)
	[ "$held" -gt 0 ] || fail "the trace a reader held was cut to $held bytes"
	[ "$(stat -L -c %i /proc/self/fd/3)" != "$(stat -c %i r.trace)" ] ||
		fail "the trace was not replaced by its compacted copy: $(cat err)"
	exec 3<&-
	"$ALLOCPROF" stats --json r.trace >r.json 2>r.err || fail "stats: $(cat r.err)"
	[ "$(jget r.json symbols_kept)" -gt 0 ] || fail "no symbols kept: $(cat r.json)"
	;;
*)
	echo "unknown group $group"
	exit 2
	;;
esac
exit $failed
