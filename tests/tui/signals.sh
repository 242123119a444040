#!/bin/sh
# `allocprof tui` on a real terminal, ended by Ctrl-C or SIGTERM: the
# terminal is itself again (endwin: echo and canonical input back) and
# the TUI dies of the signal as every other command does, so that a shell
# sees 130 (128 + SIGINT) or 143 (SIGTERM); ncurses' own handler exited
# with status 1. And a trace of record -p says on the status line (where
# a user looks, the screen hiding stderr) that it starts mid-run, as a
# truncated trace's warning is.
# Skipped (exit 77) when tmux is not installed.
# usage: signals.sh ALLOCPROF MKTRACE
. "$(dirname "$0")/tmux-setup.sh"
ap=$(realpath "$ap")
"$mktrace" "$tmp/att.trace" 1 attached || exit 1

# start NAME TRACE: the TUI on TRACE in a new pane of 160x30; the shell
# around it catches SIGINT (a trap, which the TUI does not inherit), so
# that it lives on to write the status and the terminal's modes
start() {
	rm -f "$tmp/rc" "$tmp/stty" "$tmp/err"
	tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s "$1" -x 160 -y 30 \
		"trap : INT; cd '$tmp' && env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 \
		'$ap' tui --no-measure '$2' 2>err; echo \$? >rc; stty -a >stty" || exit 1
}

# shown NAME WANT: polls the pane's last line (up to ~20 s; no timing is
# asserted) until it is WANT
shown() {
	i=0
	while [ $i -lt 200 ]; do
		last=$(tmux -L "$sock" capture-pane -p -t "$1" | sed 's/ *$//' | tail -n 1)
		[ "$last" = "$2" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "FAIL $1: the status line is '$last', not '$2'"
	fail=1
	return 1
}

# ended NAME STATUS: waits for the TUI's end, then checks its exit status
# and that the terminal was given back
ended() {
	wait_for "$tmp/stty"
	rc=$(cat "$tmp/rc" 2>/dev/null)
	[ "$rc" = "$2" ] || { echo "FAIL $1: exit status '$rc', expected $2"; fail=1; }
	for mode in echo icanon; do
		grep -Eq "(^| )$mode( |$)" "$tmp/stty" ||
			{ echo "FAIL $1: terminal not restored: $mode off"; fail=1; }
	done
}

# the attach note: on the status line, as on stderr
note="note: recorded from a running process (record -p): the trace starts mid-run, without the blocks allocated before"
start attached att.trace
shown attached "$note"
tmux -L "$sock" send-keys -t attached q
ended "attached, q" 0
grep -q "^allocprof: att.trace: recorded from a running process (record -p)" "$tmp/err" ||
	{ echo "FAIL attached: stderr: $(cat "$tmp/err")"; fail=1; }
# (so does a truncated trace's warning: the first step's "... " on the
# status line wiped them both before they were seen)
sz=$(wc -c <"$tmp/fx.trace")
head -c $((sz - 10)) "$tmp/fx.trace" >"$tmp/cut.trace"
start cut cut.trace
shown cut "$(cd "$tmp" && "$ap" tui --batch --size 160x30 --no-measure cut.trace 2>/dev/null | tail -n 1)"
case $last in
"warning: truncated trace ("*) ;;
*) echo "FAIL cut: the status line: '$last'"; fail=1 ;;
esac
tmux -L "$sock" send-keys -t cut q
ended "cut, q" 0
# a trace recorded from the start has nothing to say there
start whole fx.trace
shown whole "$(cd "$tmp" && "$ap" tui --batch --size 160x30 --no-measure fx.trace | tail -n 1)"

# Ctrl-C: 130, the terminal restored
tmux -L "$sock" send-keys -t whole C-c
ended "Ctrl-C" 130
# SIGTERM: 143
start term fx.trace
shown term "$(cd "$tmp" && "$ap" tui --batch --size 160x30 --no-measure fx.trace | tail -n 1)"
pane=$(tmux -L "$sock" list-panes -t term -F '#{pane_pid}')
tui=$(pgrep -P "$pane")
[ -n "$tui" ] && kill -TERM "$tui"
ended SIGTERM 143
[ $fail = 0 ] && echo "ok: 130 on Ctrl-C, 143 on SIGTERM, the terminal restored; the attach note on the status line"
exit $fail
