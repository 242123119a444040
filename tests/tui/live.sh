#!/bin/sh
# `allocprof record --live` under tmux: record runs testdata/live and shows
# the live view on its trace; the status line says it follows and names
# the file the program's output goes to (TRACE.out, which gets it: the
# screen is the view's); once the program is told to stop it says the
# program ended; q ends the view, record then says what it held (its
# summary line) and exits with the program's status, the terminal's
# settings as they were. Without a terminal --live is refused in one line
# and the program does not run. No timing is asserted: each step polls.
# Skipped (exit 77) when tmux is not installed.
# usage: live.sh ALLOCPROF MKTRACE LIVE
. "$(dirname "$0")/tmux-setup.sh"
ap=$(realpath "$ap")
live=$(realpath "$3")
tr="$tmp/r.trace"

# no terminal: refused, nothing run
if "$ap" record --live --all -o "$tmp/no.trace" "$live" "$tmp/nostop" >"$tmp/no.out" 2>"$tmp/no.err"; then
	echo "FAIL record --live without a terminal ran"
	fail=1
fi
if ! grep -q "^allocprof: record: --live shows the view on a terminal" "$tmp/no.err" ||
	[ "$(wc -l <"$tmp/no.err")" != 1 ] || [ -e "$tmp/no.trace" ]; then
	echo "FAIL record --live without a terminal: not one line of refusal, or a trace:"
	cat "$tmp/no.err"
	fail=1
fi

tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s t -x 120 -y 30 \
	"stty -g >'$tmp/stty.before'; env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 \
	'$ap' record --live --all -o '$tr' '$live' '$tmp/stop' 2>'$tmp/err'; \
	echo \$? >'$tmp/rc'; stty -g >'$tmp/stty.after'" || exit 1

poll() {
	i=0
	while [ $i -lt 300 ]; do
		"$@" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
shows() {
	tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
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
check "following, the output named" shows "its output: $tr.out"
check "following" shows "following: "
check "the call sites" shows "make_request"
touch "$tmp/stop"
check "the end said" shows "program ended at "
if [ -s "$tmp/err" ]; then
	echo "FAIL record spoke while the view was up:"
	cat "$tmp/err"
	fail=1
fi
tmux -L "$sock" send-keys -t t q
poll test -s "$tmp/stty.after" || { echo "FAIL q did not end record"; fail=1; }
rc=$(cat "$tmp/rc" 2>/dev/null)
[ "$rc" = 0 ] || { echo "FAIL record: exit status '$rc', the program's is 0"; fail=1; }
grep -q "^allocprof: wrote $tr " "$tmp/err" || { echo "FAIL record's summary after the view:"; cat "$tmp/err"; fail=1; }
grep -q "^rounds [0-9]" "$tr.out" || { echo "FAIL the program's output is not in $tr.out"; fail=1; }
if ! cmp -s "$tmp/stty.before" "$tmp/stty.after"; then
	echo "FAIL the terminal's settings changed"
	fail=1
fi
# Ctrl-C is for the program: it dies of SIGINT, the view stays and says
# so (not "exit status 2"), record says nothing of the view's status, and
# after q record dies of the program's signal (the shell's 130; the
# shell itself catches SIGINT, or it would end with its job)
tr2="$tmp/c.trace"
tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s c -x 120 -y 30 \
	"trap : INT; env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 '$ap' record --live --all -o '$tr2' '$live' '$tmp/never' \
	2>'$tmp/err2'; echo \$? >'$tmp/rc2'; stty -g >'$tmp/stty.after2'" || exit 1
shows2() {
	tmux -L "$sock" capture-pane -p -t c | sed 's/ *$//' >"$tmp/got"
	grep -qF -- "$1" "$tmp/got"
}
check "Ctrl-C: following" shows2 "following: "
tmux -L "$sock" send-keys -t c C-c
check "Ctrl-C: the view stays and says the program's signal" shows2 ", by signal 2: final"
tmux -L "$sock" send-keys -t c q
poll test -s "$tmp/stty.after2" || { echo "FAIL Ctrl-C: q did not end record"; fail=1; }
rc=$(cat "$tmp/rc2" 2>/dev/null)
[ "$rc" = 130 ] || { echo "FAIL Ctrl-C: record's exit status '$rc', want 130 (SIGINT, the program's end)"; fail=1; }
if grep -q "live view" "$tmp/err2"; then
	echo "FAIL Ctrl-C: record spoke of the view:"
	cat "$tmp/err2"
	fail=1
fi
if ! cmp -s "$tmp/stty.before" "$tmp/stty.after2"; then
	echo "FAIL Ctrl-C: the terminal's settings changed"
	fail=1
fi
[ $fail = 0 ] && echo "ok: record --live showed the run, kept the screen the view's, and ended"
exit $fail
