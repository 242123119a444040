#!/bin/sh
# `allocprof tui` on a terminal that cannot place the cursor (TERM=dumb, as
# an Emacs shell buffer sets it): one line on stderr saying so and what to
# use instead, exit status 1, and the terminal left as it was; not a
# screen drawn as the last line over and over. Then an unknown terminal
# type, and a usable one, for contrast. Skipped (exit 77) without tmux.
# usage: dumb.sh ALLOCPROF MKTRACE
. "$(dirname "$0")/tmux-setup.sh"
# run NAME TERM: the tui in a new tmux window with TERM, then q
run() {
	name=$1 term=$2
	tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s "$name" -x 100 -y 30 \
		"env TERM=$term LC_ALL=C ALLOCPROF_NO_PROGRESS=1 '$ap' tui --no-measure '$tmp/fx.trace' \
		2>'$tmp/$name.err'; echo \$? >'$tmp/$name.rc'" || return 1
	i=0
	while [ ! -s "$tmp/$name.rc" ] && [ $i -lt 100 ]; do
		tmux -L "$sock" send-keys -t "$name" q 2>/dev/null
		sleep 0.2
		i=$((i + 1))
	done
}
run dumb dumb
run unknown nosuchterminal
run screen screen
[ "$(cat "$tmp/dumb.rc" 2>/dev/null)" = 1 ] || { echo "FAIL dumb: exit status $(cat "$tmp/dumb.rc" 2>/dev/null)"; fail=1; }
[ "$(cat "$tmp/dumb.err")" = "allocprof: tui: terminal type 'dumb' cannot place the cursor (use top, list, advise, or --batch)" ] ||
	{ echo "FAIL dumb: stderr: $(cat "$tmp/dumb.err")"; fail=1; }
[ "$(cat "$tmp/unknown.rc" 2>/dev/null)" = 1 ] && grep -q "cannot use terminal type 'nosuchterminal'" "$tmp/unknown.err" ||
	{ echo "FAIL unknown: $(cat "$tmp/unknown.rc" 2>/dev/null) $(cat "$tmp/unknown.err")"; fail=1; }
[ "$(cat "$tmp/screen.rc" 2>/dev/null)" = 0 ] && [ ! -s "$tmp/screen.err" ] ||
	{ echo "FAIL screen: $(cat "$tmp/screen.rc" 2>/dev/null) $(cat "$tmp/screen.err")"; fail=1; }
exit $fail
