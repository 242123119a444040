#!/bin/sh
# `allocprof tui --follow` on a real terminal while a program runs: record
# runs testdata/live (two threads, a round every 20 ms) and tmux runs the
# live view on its trace. While it runs: the numbers on the screen move
# between two captures, the keys answer (the cursor moves; 's' changes the
# sample index; 'T' and 'a' open the timeline and the advisor's model,
# made by the follower), and the status line says it is following. Then
# the program is told to stop: the status line says it ended, and the
# screen, but for its status line, is the one `tui --batch` draws on the
# finished trace (the numbers `top` prints: the alloc_objects of the call
# sites are compared with top's too). q ends it with status 0, nothing on
# stderr, and the terminal's settings as they were (stty -g before and
# after). No timing is asserted: each step polls (up to ~30 s).
# Skipped (exit 77) when tmux is not installed.
# usage: follow.sh ALLOCPROF MKTRACE LIVE
. "$(dirname "$0")/tmux-setup.sh"
ap=$(realpath "$ap")
live=$(realpath "$3")
tr="$tmp/l.trace"
"$ap" record --all -o "$tr" "$live" "$tmp/stop" >"$tmp/prog.out" 2>"$tmp/rec.err" &
rec=$!

# poll CMD...: up to ~30 s until CMD succeeds
poll() {
	i=0
	while [ $i -lt 300 ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
has_header() {
	[ "$(stat -c %s "$tr" 2>/dev/null || echo 0)" -gt 200 ]
}
poll has_header || { echo "FAIL the program's trace never got its header"; exit 1; }

tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s t -x 120 -y 30 \
	"stty -g >'$tmp/stty.before'; env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 \
	ALLOCPROF_TEST_COSTS='${ALLOCPROF_TEST_COSTS:-}' '$ap' tui --follow '$tr' \
	2>'$tmp/err'; echo \$? >'$tmp/rc'; stty -g >'$tmp/stty.after'" || exit 1

screen() {
	tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
}
keys() {
	tmux -L "$sock" send-keys -t t "$@"
}
# shows TEXT: the pane has a line with TEXT (a fixed string)
shows() {
	screen
	grep -qF -- "$1" "$tmp/got"
}
check() {
	name=$1
	shift
	if ! poll "$@"; then
		echo "FAIL $name:"
		cat "$tmp/got"
		fail=1
	fi
}
# The Total: on the title line
total() {
	screen
	sed -n '1s/.*Total: \([^ ]*\).*/\1/p' "$tmp/got"
}
moved() {
	t2=$(total)
	[ -n "$t2" ] && [ "$t2" != "$t1" ]
}

check "following on the status line" shows "following: "
check "a total on the title" shows "Total: "
t1=$(total)
check "the numbers move (Total was $t1)" moved
# (the cursor stays on its node as the rows change: on the first row, then
# one down)
check "the call sites" shows "make_request"
keys Home j
check "the cursor moves" shows "2/"
keys s
check "s: alloc_objects" shows "Type: alloc_objects"
keys T
check "T: the timeline, made by the follower" shows "timeline: live"
keys q a
check "a: the advisor's model, made by the follower" shows "advise: live"
keys q
check "back on top" shows "Type: alloc_objects"

touch "$tmp/stop"
wait $rec
rrc=$?
[ $rrc = 0 ] || { echo "FAIL record: exit status $rrc"; cat "$tmp/rec.err"; fail=1; }
check "the end on the status line" shows "program ended at "
# the screen but its status line, as the batch mode draws the finished trace
LC_ALL=C ALLOCPROF_NO_PROGRESS=1 "$ap" tui --batch --size 120x30 --keys js "$tr" |
	sed '$d' >"$tmp/want"
same() {
	screen
	sed '$d' "$tmp/got" | diff -u "$tmp/want" - >"$tmp/diff"
}
if ! poll same; then
	echo "FAIL the final screen is not tui --batch's on the finished trace:"
	cat "$tmp/diff"
	fail=1
fi
# and the call sites' counts are top's
"$ap" top --alloc_objects "$tr" >"$tmp/top" 2>/dev/null
for f in make_request keep_result; do
	want=$(awk -v f=$f '$NF == f { print $1 }' "$tmp/top")
	got=$(awk -v f=$f '$NF == f { print $1 }' "$tmp/got")
	if [ -z "$want" ] || [ "$got" != "$want" ]; then
		echo "FAIL $f: the live view ends with '$got' allocations, top says '$want'"
		fail=1
	fi
done

keys q
poll test -s "$tmp/stty.after" || { echo "FAIL q did not end the view"; fail=1; }
rc=$(cat "$tmp/rc" 2>/dev/null)
[ "$rc" = 0 ] || { echo "FAIL q: exit status '$rc'"; fail=1; }
if [ -s "$tmp/err" ]; then
	echo "FAIL stderr not empty:"
	cat "$tmp/err"
	fail=1
fi
if ! cmp -s "$tmp/stty.before" "$tmp/stty.after"; then
	echo "FAIL the terminal's settings changed: $(cat "$tmp/stty.before") -> $(cat "$tmp/stty.after")"
	fail=1
fi
[ $fail = 0 ] && echo "ok: the live view followed the run, answered its keys and ended on top's numbers"
exit $fail
