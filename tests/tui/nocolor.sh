#!/bin/sh
# NO_COLOR (https://no-color.org) in `allocprof tui` on a real terminal:
# tmux runs it on a terminal with colours (TERM=screen, 8 colours), and
# `capture-pane -e` shows the attributes it drew. Without NO_COLOR, or with
# it empty, the title bar is coloured; with NO_COLOR=1 no cell has a
# foreground or background colour, and the title and the cursor row are
# still marked, in reverse video. Skipped (exit 77) without tmux.
# usage: nocolor.sh ALLOCPROF MKTRACE
. "$(dirname "$0")/tmux-setup.sh"

# sgr NAME ENV: runs the tui in a new window with ENV, waits (up to ~20 s,
# no timing asserted) until the table is drawn, and writes the SGR
# parameters of the screen, one per line, to $tmp/NAME.sgr.
sgr() {
	name=$1 envs=$2
	tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s "$name" -x 100 -y 30 \
		"env -u NO_COLOR $envs LC_ALL=C ALLOCPROF_NO_PROGRESS=1 \
		ALLOCPROF_TEST_COSTS='${ALLOCPROF_TEST_COSTS:-}' '$ap' tui '$tmp/fx.trace'" || return 1
	i=0
	while [ $i -lt 200 ]; do
		tmux -L "$sock" capture-pane -e -p -t "$name" >"$tmp/$name.screen"
		grep -q 'flat%' "$tmp/$name.screen" && break
		sleep 0.1
		i=$((i + 1))
	done
	tmux -L "$sock" send-keys -t "$name" q
	grep -q 'flat%' "$tmp/$name.screen" || {
		echo "FAIL $name: the table was never drawn:"
		cat "$tmp/$name.screen"
		return 1
	}
	# ESC [ a;b;c m  ->  a, b, c on lines of their own
	grep -o "$(printf '\033')\[[0-9;]*m" "$tmp/$name.screen" |
		sed 's/^.\[//; s/m$//' | tr ';' '\n' >"$tmp/$name.sgr"
}

# colours FILE: the number of colour parameters (30-38, 40-48, 90-97,
# 100-107; 39 and 49, back to the default, are not colours).
colours() {
	grep -Ec '^(3[0-8]|4[0-8]|9[0-7]|10[0-7])$' "$1"
}

for run in plain:'' empty:'NO_COLOR=' set:'NO_COLOR=1'; do
	name=${run%%:*}
	sgr "$name" "${run#*:}" || { fail=1; continue; }
	n=$(colours "$tmp/$name.sgr")
	rev=$(grep -c '^7$' "$tmp/$name.sgr")
	case $name in
	set)
		if [ "$n" != 0 ]; then
			echo "FAIL NO_COLOR=1: $n colour attributes drawn:"
			sort "$tmp/$name.sgr" | uniq -c
			fail=1
		fi
		if [ "$rev" = 0 ]; then
			echo "FAIL NO_COLOR=1: nothing in reverse video (title, cursor)"
			fail=1
		fi ;;
	*)
		if [ "$n" = 0 ]; then
			echo "FAIL NO_COLOR ${name}: no colour drawn (the test sees none either way)"
			fail=1
		fi ;;
	esac
	echo "$name: $n colour attributes, $rev reverse"
done
[ $fail = 0 ] && echo "ok: NO_COLOR=1 draws no colour, NO_COLOR unset or empty does"
exit $fail
