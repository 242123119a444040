#!/bin/sh
# `allocprof tui` on a real terminal: tmux runs it in a 100x30 pane, keys go
# in through send-keys, and after each step the pane must show exactly what
# `tui --batch` prints for the same keys (the same drawing code, so any
# difference is the curses front end's: blitting, resizing, key decoding).
# Then q must end it with status 0 and nothing on stderr.
# Skipped (exit 77) when tmux is not installed.
# usage: tmux.sh ALLOCPROF MKTRACE
. "$(dirname "$0")/tmux-setup.sh"
tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s t -x 100 -y 30 \
	"env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 ALLOCPROF_TEST_COSTS='${ALLOCPROF_TEST_COSTS:-}' \
	'$ap' tui --no-measure '$tmp/fx.trace' 2>'$tmp/err'; echo \$? >'$tmp/rc'" || exit 1

# expect_screen NAME BATCH_KEYS [SIZE]: polls the pane (up to ~20 s, for a
# slow machine; no timing is asserted) until it equals the batch screen.
expect_screen() {
	name=$1 keys=$2 size=${3:-100x30}
	"$ap" tui --batch --no-measure --size "$size" --keys "$keys" "$tmp/fx.trace" >"$tmp/want" || {
		echo "FAIL $name: tui --batch failed"
		fail=1
		return
	}
	i=0
	while [ $i -lt 200 ]; do
		tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
		cmp -s "$tmp/got" "$tmp/want" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "FAIL $name: the terminal shows something else than tui --batch --keys '$keys':"
	diff -u "$tmp/want" "$tmp/got"
	fail=1
}

keys() {
	tmux -L "$sock" send-keys -t t "$@"
}

expect_screen "start" ""
keys j j L
expect_screen "list" "jjL"
keys Escape
expect_screen "back" "jjL<esc>"
keys Enter
expect_screen "callers and callees" "jjL<esc><enter>"
keys Up Enter
expect_screen "to the caller" "jjL<esc><enter>k<enter>"
keys BSpace
expect_screen "backspace" "jjL<esc><enter>k<enter><bs>"
keys T
expect_screen "timeline" "jjL<esc><enter>k<enter><bs>T"
keys q q
expect_screen "back to the table" "jjL<esc><enter>k<enter><bs>Tqq"
P="jjL<esc><enter>k<enter><bs>Tqq"
keys a Down Enter
expect_screen "advise site" "${P}aj<enter>"
keys q q s g
expect_screen "index and granularity" "${P}aj<enter>qqsg"
keys / p a r s Enter
expect_screen "focus" "${P}aj<enter>qqsg/pars<enter>"
tmux -L "$sock" resize-window -t t -x 80 -y 24
expect_screen "resized" "${P}aj<enter>qqsg/pars<enter><resize:80x24>" 80x24
keys NPage End Up
expect_screen "moved" "${P}aj<enter>qqsg/pars<enter><resize:80x24><pgdn><end><up>" 80x24
keys T
expect_screen "timeline resized" "${P}aj<enter>qqsg/pars<enter><resize:80x24><pgdn><end><up>T" 80x24
keys q
keys q
wait_for "$tmp/rc"
rc=$(cat "$tmp/rc" 2>/dev/null)
if [ "$rc" != 0 ]; then
	echo "FAIL q: exit status '$rc', expected 0"
	fail=1
fi
if [ -s "$tmp/err" ]; then
	echo "FAIL stderr not empty:"
	cat "$tmp/err"
	fail=1
fi
[ $fail = 0 ] && echo "ok: the terminal screens equal the batch screens"
exit $fail
