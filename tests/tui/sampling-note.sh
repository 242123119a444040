#!/bin/sh
# A sampled trace with few or no samples: the note that says why (what
# the program allocated, to record with --all or a smaller --rate) goes to
# stderr, which a terminal's screen hides, and so to the TUI's status line
# too, where the table is empty or its numbers rough.
# usage: sampling-note.sh ALLOCPROF PROGRAM
ap=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# the program allocates far less than one sampling interval
"$ap" record -q --rate 1GB -o "$tmp/few.trace" "$prog" >/dev/null 2>"$tmp/rec.err" ||
	{ echo "FAIL record: $(cat "$tmp/rec.err")"; exit 1; }
"$ap" tui --batch --size 400x10 "$tmp/few.trace" >"$tmp/screen" 2>"$tmp/err" ||
	{ echo "FAIL tui exited non-zero: $(cat "$tmp/err")"; fail=1; }
note=$(sed -n 's/^allocprof: note: //p' "$tmp/err")
last=$(tail -n 1 "$tmp/screen")
case "$note" in
*"record with --all"*) ;;
*) echo "FAIL no sampling note on stderr: $(cat "$tmp/err")"; fail=1 ;;
esac
[ "$last" = "note: $note" ] || { echo "FAIL the status line is not the note:"; cat "$tmp/screen"; fail=1; }
# a trace of every allocation has nothing to say
"$ap" record -q --all -o "$tmp/all.trace" "$prog" >/dev/null 2>&1 || { echo "FAIL record --all"; exit 1; }
"$ap" tui --batch --size 400x10 "$tmp/all.trace" >"$tmp/screen" 2>"$tmp/err"
tail -n 1 "$tmp/screen" | grep -q '^q:quit' || { echo "FAIL --all: status line:"; cat "$tmp/screen"; fail=1; }
[ -s "$tmp/err" ] && { echo "FAIL --all: stderr: $(cat "$tmp/err")"; fail=1; }
exit $fail
