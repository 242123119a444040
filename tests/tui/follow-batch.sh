#!/bin/sh
# `allocprof tui --follow --batch` on a trace written while it reads it (in
# three parts, 300 ms apart, the buffers file saying how far the threads
# are, by tests/trace/test-follow --write; no sampler, so that the
# sanitized build runs the follower too): once the trace has ended it
# applies its keys, and its screen, but for the status line, is the one
# `tui --batch` draws on the finished trace; the status line says the
# program ended. On the finished trace --follow is as without it; an empty
# file is waited for 10 s, then said.
# usage: follow-batch.sh ALLOCPROF TEST_FOLLOW
set -u
ap=$1 writer=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tr="$tmp/w.trace"
# until the writer has written its first part to FILE
first_part() {
	i=0
	while [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -lt 200 ] && [ $i -lt 300 ]; do
		sleep 0.05
		i=$((i + 1))
	done
}
"$writer" --write "$tr" 300 &
w=$!
first_part "$tr"
fail=0
"$ap" tui --follow --batch --size 100x30 --keys 'js' "$tr" >"$tmp/got" 2>"$tmp/err" ||
	{ echo "FAIL tui --follow --batch: exit status $?"; fail=1; }
wait $w || { echo "FAIL the writer failed"; fail=1; }
# and, asked for once it has ended, the timeline (made by the work thread,
# as for any finished trace)
"$writer" --write "$tmp/t.trace" 300 &
w=$!
first_part "$tmp/t.trace"
"$ap" tui --follow --batch --size 100x30 --keys 'T' "$tmp/t.trace" 2>&1 | sed '$d' >"$tmp/gotT"
wait $w
"$ap" tui --batch --size 100x30 --keys 'T' "$tmp/t.trace" 2>&1 | sed '$d' >"$tmp/wantT"
grep -q "^timeline: " "$tmp/gotT" && cmp -s "$tmp/gotT" "$tmp/wantT" ||
	{ echo "FAIL the timeline once followed to the end:"; diff -u "$tmp/wantT" "$tmp/gotT"; fail=1; }
"$ap" tui --batch --size 100x30 --keys 'js' "$tr" >"$tmp/want" 2>/dev/null
if ! sed '$d' "$tmp/got" | diff -u "$(sed '$d' "$tmp/want" >"$tmp/want1"; echo "$tmp/want1")" -; then
	echo "FAIL the followed screen is not the finished trace's"
	fail=1
fi
tail -n 1 "$tmp/got" | grep -q "program ended at [0-9.]*s, exit status 0: final | " ||
	{ echo "FAIL the status line: $(tail -n 1 "$tmp/got")"; fail=1; }
# A program that started others: their traces (TRACE.<pid>) are not this
# view's, and the status line says so once it ended (top reads them).
"$writer" --write "$tmp/p.trace" 300 &
w=$!
first_part "$tmp/p.trace"
cp "$tmp/t.trace" "$tmp/p.trace.4242"
"$ap" tui --follow --batch --size 200x30 "$tmp/p.trace" >"$tmp/gotP" 2>&1
wait $w
tail -n 1 "$tmp/gotP" | grep -q "program ended at [0-9.]*s, exit status 0: final for its process alone (1 child trace: allocprof top reads the whole run) | " ||
	{ echo "FAIL the status line with a child trace: $(tail -n 1 "$tmp/gotP")"; fail=1; }
[ -s "$tmp/err" ] && { echo "FAIL stderr:"; cat "$tmp/err"; fail=1; }
# a writer killed before the end (kill -9: no END, its buffers file left,
# no lock on the trace, its process gone) is followed to where the file
# goes, and said, not waited for for ever
"$writer" --write "$tmp/k.trace" 3000 &
w=$!
first_part "$tmp/k.trace"
timeout 60 "$ap" tui --follow --batch --size 100x30 --keys 'j' "$tmp/k.trace" >"$tmp/gotK" 2>"$tmp/errK" &
f=$!
sleep 0.5
kill -9 $w
wait $w 2>/dev/null
wait $f
rc=$?
[ $rc = 0 ] || { echo "FAIL a killed writer's trace: exit status $rc (124: followed for ever)"; cat "$tmp/errK"; fail=1; }
tail -n 1 "$tmp/gotK" | grep -q "the recording stopped at [0-9.]*s without ending the trace (killed?)" ||
	{ echo "FAIL a killed writer's trace, the status line: $(tail -n 1 "$tmp/gotK")"; fail=1; }
# a finished trace follows nothing: opened as without --follow
"$ap" tui --follow --batch --size 100x30 --keys 'js' "$tr" >"$tmp/fin" 2>&1
cmp -s "$tmp/fin" "$tmp/want" || { echo "FAIL --follow on a finished trace:"; diff -u "$tmp/want" "$tmp/fin"; fail=1; }
# an empty file (record makes the trace before its program writes it) is
# waited for a while, then said
: >"$tmp/empty.trace"
if "$ap" tui --follow --batch "$tmp/empty.trace" >/dev/null 2>"$tmp/empty.err" ||
	! grep -q "^allocprof: .*empty.trace: empty after 10 s" "$tmp/empty.err"; then
	echo "FAIL --follow on an empty file:"
	cat "$tmp/empty.err"
	fail=1
fi
[ $fail = 0 ] && echo "ok: followed in parts, the finished trace's screen"
exit $fail
