#!/bin/bash
# advise stopped by a signal while its measured replay runs leaves nothing
# behind: not the directory in $TMPDIR where it records the baseline
# replay under the sampler (a --all trace), not a runner replaying on,
# orphaned. advise dies of the signal, as its caller expects.
#  1. SIGTERM while the recording directory exists;
#  2. SIGTERM during the timed rounds (no directory yet or any more): the
#     runner it was waiting for is gone too.
# (SIGTERM both times: SIGINT and SIGHUP may be ignored where the test
# runs, by a shell's background job or nohup, and advise keeps them so.)
# Environment (tests/e2e/meson.build): ALLOCPROF, TESTDATA_BUILD.
. "$(dirname "$0")/../lib.sh"
export ALLOCPROF_NO_PROGRESS=1
cd "$work" || exit 1
"$ALLOCPROF" record -q --all -o demo.trace "$TESTDATA_BUILD/demo" >/dev/null 2>&1 ||
	fail "record demo"

# runners: advise's children that are allocprof-replay (the kernel's
# command name, cut to 15 characters), read without a fork per process
runners() { # ADVISE_PID
	local f comm ppid rest
	for f in /proc/[0-9]*/stat; do
		read -r _ comm _ ppid rest <"$f" 2>/dev/null || continue
		[ "$ppid" = "$1" ] && [ "$comm" = "(allocprof-repla)" ] && { f=${f#/proc/}; echo "${f%/stat}"; }
	done
}

# stop SIG WHEN: advise with TMPDIR=$work/t.SIG, SIG sent when WHEN holds
# (dir: a recording directory exists; runner: a runner runs and no
# directory exists)
stop() {
	local sig=$1 when=$2 t=$work/t.$1.$2 pid st i kids=
	mkdir -p "$t"
	TMPDIR=$t "$ALLOCPROF" advise --measure-time 20s demo.trace >/dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 6000; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if [ "$when" = dir ]; then
			compgen -G "$t/allocprof-replay-*" >/dev/null && break
		else
			kids=$(runners "$pid")
			[ -n "$kids" ] && ! compgen -G "$t/allocprof-replay-*" >/dev/null && break
		fi
		sleep 0.005
	done
	kill -0 "$pid" 2>/dev/null || { fail "$sig: advise ended before the moment came ($when)"; return; }
	[ "$when" = dir ] && kids=$(runners "$pid")
	kill -"$sig" "$pid"
	wait "$pid"
	st=$?
	expect_eq "$sig: advise's status (128 + the signal)" "$st" "$((128 + $(kill -l "$sig")))"
	# advise reaped its runner before it died: none is left, not even a
	# zombie (an orphan would replay on for a while)
	for k in $kids; do
		[ -d "/proc/$k" ] && fail "$sig: the runner $k is still there: $(grep ^State: "/proc/$k/status")"
	done
	sleep 0.3
	left=$(ls -A "$t")
	[ -z "$left" ] || fail "$sig: left in TMPDIR: $left"
}
stop TERM dir
stop TERM runner
exit $failed
