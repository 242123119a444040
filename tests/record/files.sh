#!/usr/bin/env bash
# The files `allocprof record` and the sampler make (issue 24): each
# process's trace in a file of its own, made where no file is (never
# through a planted symbolic link, never over another file: a reused pid,
# processes of other pid namespaces), a trace handed on to a child that
# dropped to another user or to an image exec'd before anything was
# recorded, one record per -o at a time, an -o too long for the names the
# children need. One argument picks the group.
# Environment (from meson): ALLOCPROF, FILES (tests/record/files.c).
group=$1
. "$(dirname "$0")/lib.sh"

# in_pidns CMD...: CMD as pid 1 of a new pid namespace (record there
# is pid 1; its signal helper and the program take the next pids, and
# the children come after, in an order that can vary).
in_pidns() {
	unshare -p -f --mount-proc "$@"
}

# drop_run LABEL WANT COMMAND...: COMMAND recorded with --all into
# private/ (closed to others): record ends with 0, nothing on the
# program's stderr, and the run reads, whole, with WANT allocations
# ("some": more than 1000).
drop_run() {
	local label=$1 want=$2
	shift 2
	rm -f private/*
	"$ALLOCPROF" record -q --all -o private/d.trace "$@" >out 2>err
	expect_eq "record exit status ($label)" "$?" 0
	expect_eq "stderr ($label)" "$(cat err)" ""
	if "$ALLOCPROF" stats --json private/d.trace >d.json 2>d.err; then
		local got
		got=$(jget d.json alloc_objects)
		[ "$want" = some ] && [ "$got" -gt 1000 ] && got=some
		expect_eq "alloc_objects ($label)" "$got" "$want"
		expect_eq "truncated ($label)" "$(jget d.json truncated)" false
	else
		fail "stats of the run ($label): $(cat d.err)"
	fi
}

pidns_or_skip() {
	in_pidns true 2>/dev/null || skip "unshare -p -f --mount-proc fails here (needs CAP_SYS_ADMIN): $(in_pidns true 2>&1 | head -1)"
}

case $group in
planted)
	# Names a child's and an exec'd image's trace will take, planted in
	# a directory anyone can write: symbolic links to the user's files,
	# and a file already there. Nothing of theirs may change, and the
	# run keeps every process under names of its own.
	pidns_or_skip
	# The pids the children get in a new namespace are small, but their
	# order is not fixed (record's helpers start beside the program): a
	# name planted for each of the first 64, a link to one of the
	# user's files or a file already there, in turn.
	mkdir -m 1777 shared
	printf 'precious\n' >victim
	printf 'precious too\n' >victim2
	chmod 600 victim victim2
	for n in $(seq 1 64); do
		case $((n % 3)) in
		0) ln -s ../victim shared/app.trace.$n ;;
		1) ln -s ../victim2 shared/app.trace.$n ;;
		2) printf 'an earlier file %s\n' $n >shared/app.trace.$n ;;
		esac
	done
	ln -s ../victim2 shared/app.trace.exec1
	touch -h -d '1 hour ago' shared/app.trace.*
	state() {
		md5sum victim victim2
		stat -c '%a %s %Y' victim victim2
		for f in shared/app.trace.[0-9]* shared/app.trace.exec1; do
			case $f in *-*) continue ;; esac
			if [ -L "$f" ]; then
				echo "$f -> $(readlink "$f")"
			else
				echo "$f $(stat -c '%a %s %Y' "$f") $(md5sum <"$f")"
			fi
		done
	}
	before=$(state)
	in_pidns "$ALLOCPROF" record --all -o shared/app.trace "$FILES" forkexec 3 >out 2>err
	expect_eq "record exit status" "$?" 0
	expect_eq "planted files and links untouched" "$(state)" "$before"
	for f in shared/app.trace*; do
		case $f in
		shared/app.trace.[0-9]* | shared/app.trace.exec1)
			case $f in *-*) [ -L "$f" ] && fail "$f: a symbolic link" ;; esac ;;
		*) [ -L "$f" ] && fail "$f: a symbolic link" ;;
		esac
	done
	# forkexec 3: 1000 pairs in each of 3 children and in the program,
	# then an exec'd image with 500
	if "$ALLOCPROF" stats --json shared/app.trace >s.json 2>s.err; then
		expect_eq "processes in the run" "$(jlen s.json processes)" 5
		expect_eq "alloc_objects" "$(jget s.json alloc_objects)" 4500
		expect_eq "free_objects" "$(jget s.json free_objects)" 4500
	else
		fail "stats of the run: $(cat s.err)"
	fi
	grep -q "not an allocprof trace" err && fail "record took a planted file for a trace: $(cat err)"
	# every child took a name of its own beside the one planted for its
	# pid (a link or an earlier file), and so did the exec'd image
	expect_eq "children's traces beside planted names" \
		"$(ls shared | grep -c '^app\.trace\.[0-9][0-9]*-2$')" 3
	[ -s shared/app.trace.exec1-2 ] || fail "no trace for the exec'd image: $(ls shared)"
	# the buffers files (<trace>.buffers) took the traces' own names, and
	# record removed them once it had finished the traces
	ls shared/*.buffers >/dev/null 2>&1 && fail "buffers files left: $(ls shared)"
	;;
reuse)
	# A pid reused within one run (set through ns_last_pid in a pid
	# namespace of our own): the earlier process's trace stays whole.
	pidns_or_skip
	in_pidns "$ALLOCPROF" record -q --all -o r.trace "$FILES" reuse >out 2>err
	rc=$?
	grep -q '^reused [0-9]*$' out || [ "$rc" != 0 ] || skip "the pid was not reused: $(cat out err)"
	expect_eq "record exit status" "$rc" 0
	if "$ALLOCPROF" stats --json r.trace >r.json 2>r.err; then
		expect_eq "processes in the run" "$(jlen r.json processes)" 3
		# 1000 pairs in each child and in the program, and printf's buffer
		expect_eq "alloc_objects" "$(jget r.json alloc_objects)" 3001
	else
		fail "stats of the run: $(cat r.err)"
	fi
	;;
runs)
	# Two runs at one -o, each record in a pid namespace of its own, so
	# their programs get the same pid; the first run's daemon forks after
	# the second began. By the pid alone (HEADER run_pid) the second run
	# took the daemon's child for its own, and its reports read it; the
	# run's number beside the pid (run_id) tells them apart (review22).
	pidns_or_skip
	# run A: sh is the namespace's pid 1 and outlives record (the
	# namespace would end with it, the daemon with it) until the daemon
	# is done
	in_pidns sh -c '"$0" record -o r.trace bash -c "setsid bash -c \"echo \\\$\\\$ >dpid
		until [ -e go ]; do sleep 0.05; done
		( echo \\\$BASHPID >late; exec /usr/bin/true )
		exec touch done\" >/dev/null 2>&1 </dev/null &" 2>errA
		until [ -e done ]; do sleep 0.05; done; sleep 1' "$ALLOCPROF" &
	a=$!
	for _ in $(seq 1 300); do [ -s dpid ] && [ -s errA ] && break; sleep 0.02; done
	# run B: the same pids (sh 1, record 2, its helper 3, its program 4)
	in_pidns sh -c '"$0" record -o r.trace bash -c "touch go; until [ -e done ]; do sleep 0.05; done" 2>errB' "$ALLOCPROF"
	wait $a
	late=$(cat late 2>/dev/null)
	[ -n "$late" ] || fail "the daemon did not fork: $(cat errA)"
	! grep -q "r.trace.$late\b" errB ||
		fail "the second record finished the first run's trace: $(cat errB)"
	"$ALLOCPROF" stats --by-process r.trace >b.txt 2>&1 || fail "stats: $(cat b.txt)"
	! grep -q -e "^command  *touch done" -e "^command  */usr/bin/true" b.txt ||
		fail "the second run's reports read the first run's traces: $(cat b.txt)"
	;;
pidns)
	# Two processes in pid namespaces of their own, both pid 1, both
	# running at once: two traces, and a run that reads.
	unshare -p -f true 2>/dev/null || skip "unshare -p -f fails here (needs CAP_SYS_ADMIN): $(unshare -p -f true 2>&1 | head -1)"
	cat >two.sh <<-EOS
	#!/bin/sh
	unshare -p -f "$FILES" alloc 1000 300 &
	unshare -p -f "$FILES" alloc 1000 300 &
	wait
	EOS
	chmod +x two.sh
	"$ALLOCPROF" record -q --all -o ns.trace ./two.sh >out 2>err
	expect_eq "record exit status" "$?" 0
	ls ns.trace.1 ns.trace.1-2 >/dev/null || fail "the two pid-1 traces: $(ls)"
	if "$ALLOCPROF" stats --json --by-process ns.trace >n.json 2>n.err; then
		got=$(/usr/bin/python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(sorted(p["alloc_objects"] for p in d if p["pid"] == 1 and "alloc" in p["argv"]))' n.json)
		expect_eq "the pid-1 processes' allocations" "$got" "[1000, 1000]"
	else
		fail "stats of the run: $(cat n.err)"
	fi
	# A process of a pid namespace killed before its end: its trace is
	# named .2.exec1 by its pid there, and pid 2 outside is kthreadd,
	# running for ever. record finishes the trace itself (no finisher
	# left waiting for kthreadd), and nothing of it is lost.
	cat >killed.sh <<-EOS
	#!/bin/sh
	unshare -p -f sh -c '"$FILES" alloc 1000 5000 & sleep 0.5; kill -9 \$!; wait'
	EOS
	chmod +x killed.sh
	"$ALLOCPROF" record --all -o k.trace ./killed.sh >out 2>err
	expect_eq "record exit status (killed)" "$?" 0
	grep -q "finishes those traces" err &&
		fail "a finisher left waiting for a pid outside the namespace: $(cat err)"
	if "$ALLOCPROF" stats --json --by-process k.trace >k.json 2>k.err; then
		got=$(/usr/bin/python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([(p["pid"], p["alloc_objects"]) for p in d if "alloc" in p["argv"]])' k.json)
		expect_eq "the killed process's allocations" "$got" "[(2, 1000)]"
	else
		fail "stats of the killed run: $(cat k.err)"
	fi
	;;
dropuser)
	# A child that drops to another user before it execs, with the
	# trace in a directory only root can enter: its events are in the
	# run, and nothing lands on the program's stderr.
	[ "$(id -u)" = 0 ] || skip "needs root (setuid to 65534)"
	# the exec'd image loads the sampler as 65534: a build tree under a
	# directory closed to others (/root) cannot be preloaded by it
	lib=$(dirname "$ALLOCPROF")/../sampler/liballocprof.so
	if command -v setpriv >/dev/null; then
		setpriv --reuid 65534 --regid 65534 --clear-groups test -r "$lib" ||
			skip "user 65534 cannot read $lib (the build tree is closed to others)"
	fi
	mkdir -m 700 private
	"$ALLOCPROF" record -q --all -o private/d.trace "$FILES" dropexec >out 2>err
	expect_eq "record exit status" "$?" 0
	expect_eq "stderr" "$(cat err)" ""
	if "$ALLOCPROF" stats --json private/d.trace >d.json 2>d.err; then
		expect_eq "processes in the run" "$(jlen d.json processes)" 2
		expect_eq "alloc_objects (10 + 1000 in the exec'd image)" "$(jget d.json alloc_objects)" 1010
		expect_eq "truncated" "$(jget d.json truncated)" false
	else
		fail "stats of the run: $(cat d.err)"
	fi
	# one that allocates as the other user before it execs: the next
	# image cannot make a trace of its own there, but the child made it
	# while it was root (they were lost: 1010), and keeps its own with
	# its 5 allocations; no empty file is left
	"$ALLOCPROF" record -q --all -o private/e.trace "$FILES" dropexec 5 >out 2>err
	expect_eq "record exit status (allocations before exec)" "$?" 0
	expect_eq "stderr (allocations before exec)" "$(cat err)" ""
	if "$ALLOCPROF" stats --json private/e.trace >e.json 2>e.err; then
		expect_eq "processes in the run (allocations before exec)" "$(jlen e.json processes)" 3
		expect_eq "alloc_objects (10 + 5 before exec + 1000 in the exec'd image)" \
			"$(jget e.json alloc_objects)" 1015
	else
		fail "stats of the run (allocations before exec): $(cat e.err)"
	fi
	for f in private/*; do
		[ -s "$f" ] || fail "an empty file is left: $f"
	done
	# the same where the next image can make its trace itself: one that
	# stays root (it only clears its groups), one whose new user may
	# write the directory. The trace made ahead is not handed on: the
	# next image took the name of the image before (its buffers file
	# too, and record appended its chunks to that trace: "duplicated
	# chunk", the run unreadable), or, as the other user, could neither
	# have record drain its ring nor open root's file (1000 lost)
	mkdir -m 777 open
	for how in "private groupsexec" "open groupsexec" "open dropexec"; do
		set -- $how
		rm -f "$1"/g.trace*
		"$ALLOCPROF" record -q --all -o "$1/g.trace" "$FILES" "$2" 5 >out 2>err
		expect_eq "record exit status ($how)" "$?" 0
		expect_eq "stderr ($how)" "$(cat err)" ""
		if "$ALLOCPROF" stats --json "$1/g.trace" >g.json 2>g.err; then
			expect_eq "stats' stderr ($how)" "$(cat g.err)" ""
			expect_eq "processes in the run ($how)" "$(jlen g.json processes)" 3
			expect_eq "alloc_objects ($how)" "$(jget g.json alloc_objects)" 1015
		else
			fail "stats of the run ($how): $(cat g.err)"
		fi
		for f in "$1"/g.trace*; do
			[ -s "$f" ] || fail "an empty file is left ($how): $f"
		done
	done
	# one that execs a program of its own environment (no sampler) as
	# the other user, which runs on after the program: the trace made
	# for the next image stays empty, and nothing will open it. record
	# removes it at once (its finisher waited for that process's end,
	# a daemon's whole life)
	rm -f private/*
	"$ALLOCPROF" record --all -o private/c.trace "$FILES" dropclean >out 2>err
	expect_eq "record exit status (not profiled after)" "$?" 0
	grep -q "finishes those traces" err && fail "a finisher left waiting: $(cat err)"
	for f in private/*; do
		[ -s "$f" ] || fail "an empty file is left (not profiled after): $f"
	done
	# one that, as the other user, raises its soft RLIMIT_NOFILE to the
	# hard one and puts a file of its own on each descriptor it finds
	# (the trace made for the next image among them): each moves out of
	# its way, and it closes its own (close said EBADF, and the exec
	# handed /dev/null on as the next image's trace: 1000 lost)
	if [ "$(ulimit -H -n)" = unlimited ] || [ "$(ulimit -H -n)" -gt 1100 ]; then
		rm -f private/*
		(ulimit -S -n 1024 && "$ALLOCPROF" record -q --all -o private/u.trace "$FILES" dropdup 5) >out 2>err
		expect_eq "record exit status (descriptors taken)" "$?" 0
		expect_eq "stderr (descriptors taken)" "$(cat err)" ""
		if "$ALLOCPROF" stats --json private/u.trace >u.json 2>u.err; then
			expect_eq "alloc_objects (descriptors taken: opendir's too)" "$(jget u.json alloc_objects)" 1016
		else
			fail "stats of the run (descriptors taken): $(cat u.err)"
		fi
	fi
	# one that closes every descriptor by syscall(SYS_close_range), not
	# close_range(): the sampler's two are spared as by close_range()
	# (both were closed: the exec'd image lost, "Permission denied" on
	# the program's stderr, the first trace without its end)
	drop_run "syscall close_range" 1015 "$FILES" dropsys 5
	# one that drops to the other user, then forks workers: they cannot
	# make their traces there and run unprofiled, without a word on the
	# program's stderr ("Permission denied" twice); its own are kept
	drop_run "workers after the drop" 10 "$FILES" dropfork
	# the same in an image exec'd as the other user (setpriv): its two
	# workers printed "Permission denied" too (setpriv's allocations and
	# the image's own 1000 are in the run)
	if command -v setpriv >/dev/null; then
		drop_run "workers of the image after the drop" "some" setpriv --reuid 65534 \
			--regid 65534 --clear-groups "$FILES" fork 2
	fi
	# one that keeps root's capabilities when it drops to the other user
	# (setpriv, daemons keeping CAP_NET_BIND_SERVICE: PR_SET_KEEPCAPS)
	# has them until it execs, and the next image has none: the check
	# whether that one can make its trace is made without them (with
	# them it said yes, and the next image, unable to, lost its events
	# and said "Permission denied" on the program's stderr)
	if command -v setpriv >/dev/null; then
		"$ALLOCPROF" record -q --all -o private/k.trace setpriv --reuid 65534 \
			--regid 65534 --clear-groups "$FILES" alloc 1000 >out 2>err
		expect_eq "record exit status (capabilities kept)" "$?" 0
		expect_eq "stderr (capabilities kept)" "$(cat err)" ""
		# setpriv's own allocations before it execs are kept (they
		# were lost: none), beside the program's (how many depends on
		# its getpwnam's NSS modules: 34 with passwd: files, 228 with
		# systemd's)
		if "$ALLOCPROF" stats --json --by-process private/k.trace >k.json 2>k.err; then
			got=$(/usr/bin/python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(" ".join("%s:%s" % (p["argv"][0].rsplit("/")[-1], "some" if p["argv"][0] == "setpriv" and p["alloc_objects"] > 0 else p["alloc_objects"]) for p in d))' k.json)
			expect_eq "allocations by image (capabilities kept)" "$got" "setpriv:some files:1000"
		else
			fail "stats of the run (capabilities kept): $(cat k.err)"
		fi
		# its exec fails: the trace made ahead for the next image is
		# not left behind, empty, and the run reads
		mkdir -m 700 nx
		"$ALLOCPROF" record -q --all -o nx/n.trace setpriv --reuid 65534 --regid 65534 \
			--clear-groups /nonexistent >out 2>err
		expect_eq "record exit status (exec fails)" "$?" 127
		expect_eq "files (exec fails)" "$(ls nx)" "n.trace"
		"$ALLOCPROF" stats --json nx/n.trace >n.json 2>n.err || fail "stats (exec fails): $(cat n.err)"
	fi
	;;
handed)
	# The program execs before it has recorded anything: record's trace,
	# handed to it open, passes on to the next image (ALLOCPROF_EXEC
	# :f<fd>), which empties it and writes it from the start, at byte 0
	# of the file whatever the descriptor's offset was.
	"$ALLOCPROF" record -q --all -o h.trace "$FILES" exec 1000 >out 2>err
	expect_eq "record exit status" "$?" 0
	expect_eq "stderr" "$(cat err)" ""
	expect_eq "files" "$(ls)" "$(printf 'err\nh.trace\nout')"
	expect_eq "magic" "$(head -c 8 h.trace | tr -d '\0')" "ALLOCPRF"
	if "$ALLOCPROF" stats --json h.trace >h.json 2>h.err; then
		expect_eq "the trace's image" "$(/usr/bin/python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["argv"][1:]))' h.json)" "alloc 1000"
		expect_eq "alloc_objects (the exec'd image's)" "$(jget h.json alloc_objects)" 1000
		expect_eq "truncated" "$(jget h.json truncated)" false
	else
		fail "stats of the run: $(cat h.err)"
	fi
	# The same after 300 ms asleep (record's drain idle by then, looking
	# every 20 ms): the next image makes the buffers file anew under the
	# name whose ring record took, and record takes the new ring (aaf1854:
	# it took it at its directory read of each second only, the program
	# waiting on its full ring meanwhile, 0.7 s more; that wait is a time,
	# which the tests do not assert: the run is whole and exact)
	rm -f h.trace*
	"$ALLOCPROF" record -q --all -o h.trace "$FILES" exec 400000 300 >out 2>err
	expect_eq "record exit status (asleep first)" "$?" 0
	expect_eq "stderr (asleep first)" "$(cat err)" ""
	expect_eq "alloc_objects (asleep first)" "$(jget <("$ALLOCPROF" stats --json h.trace) alloc_objects)" 400000
	;;
probe)
	# The descriptor record hands its trace on by (ALLOCPROF_EXEC :f<fd>)
	# is a file of the program's by the time the sampler looks (a linked
	# library's constructor, run before the sampler's, put it there), and
	# a seccomp filter refuses fstat: the sampler must tell it is no trace
	# by pread, which leaves its offset where the program left it (an
	# lseek moved it to the end: the program then read nothing). Its own
	# trace is made instead, beside record's (which the program's library
	# closed), with its buffers file named after it; record's summary
	# names it (it named the empty one, "no trace was written", and the
	# buffers file took the empty one's name).
	printf 'headDATA read from byte 4' >data
	native=$(HANDED_FILE=data "$HANDED_PROBE"; echo "exit $?")
	expect_eq "natively" "$native" "read 21 bytes: DATA read from byte 4
exit 0"
	under=$(HANDED_FILE=data "$ALLOCPROF" record --all -o p.trace "$HANDED_PROBE" 2>err
		echo "exit $?")
	expect_eq "under record" "$under" "$native"
	expect_eq "the program's file" "$(cat data)" "headDATA read from byte 4"
	grep -q "^allocprof: wrote p.trace-2 " err || fail "the summary: $(cat err)"
	grep -q "no trace was written" err && fail "the summary: $(cat err)"
	ls p.trace*.buffers 2>/dev/null && fail "a buffers file is left"
	if "$ALLOCPROF" stats --json p.trace-2 >p.json 2>p.err; then
		# its malloc and printf's buffer
		expect_eq "alloc_objects" "$(jget p.json alloc_objects)" 2
	else
		fail "stats: $(cat p.err) (record said: $(cat err))"
	fi
	;;
twice)
	# Two records given one -o: the second refuses before its program
	# starts, and the first's trace is whole.
	"$ALLOCPROF" record -q --all -o t.trace "$FILES" alloc 1000 1500 >out1 2>err1 &
	first=$!
	for _ in $(seq 1 300); do [ -s t.trace ] && break; sleep 0.01; done
	"$ALLOCPROF" record -q -o t.trace "$FILES" touch ran >out2 2>err2
	rc=$?
	[ "$rc" -ne 0 ] || fail "the second record: exit status 0"
	[ -e ran ] && fail "the second record ran its program"
	expect_eq "the second record's lines" "$(wc -l <err2)" 1
	grep -q "^allocprof: .*t.trace: in use" err2 || fail "the second record's line: $(cat err2)"
	wait "$first"
	expect_eq "the first record's exit status" "$?" 0
	if "$ALLOCPROF" stats --json t.trace >t.json 2>t.err; then
		expect_eq "alloc_objects" "$(jget t.json alloc_objects)" 1000
		expect_eq "truncated" "$(jget t.json truncated)" false
	else
		fail "stats of the first trace: $(cat t.err)"
	fi
	# once it is finished, the path is free again
	"$ALLOCPROF" record -q -o t.trace "$FILES" touch ran 2>err3
	expect_eq "a record after it" "$?" 0
	[ -e ran ] || fail "a record after it: the program did not run: $(cat err3)"
	;;
longpath)
	# An -o whose children's names would not fit in PATH_MAX: refused
	# with one line before the program runs.
	d=$work
	while [ ${#d} -lt 3800 ]; do
		d=$d/$(printf 'd%.0s' $(seq 1 200))
		mkdir "$d" || skip "cannot make a deep directory here"
	done
	# 4060 bytes in all: a path open() takes, with no room for ".<pid>"
	name=$(printf 'x%.0s' $(seq 1 $((4060 - ${#d} - 1))))
	"$ALLOCPROF" record -o "$d/$name" "$FILES" touch "$work/ran" >out 2>err
	rc=$?
	expect_eq "record exit status" "$rc" 1
	[ -e "$work/ran" ] && fail "the program ran"
	expect_eq "lines" "$(wc -l <err)" 1
	grep -q "^allocprof: .*: the trace's path is too long" err || fail "the line: $(cat err)"
	;;
*)
	echo "unknown group $group"
	exit 2
	;;
esac
exit $failed
