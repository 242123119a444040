#!/bin/bash
# A warning is said once per command, however many processes the run
# has: a program without line information started three times by a
# shell, recorded as one run, gets its "no line information" warning
# once from advise (which always views process by process) and from
# the views with --by-process, not once per process. And an output
# that cannot be written is one line, said before anything else.
# Usage: warnonce.sh ALLOCPROF ESCNAME
set -u
ap=$1 prog=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-warnonce.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
fail=0
"$ap" record -q --all -o "$tmp/r.trace" -- /bin/sh -c \
	'"$1" >/dev/null; "$1" >/dev/null; "$1" >/dev/null' sh "$prog" ||
	{ echo "FAIL record"; exit 1; }
[ "$(ls "$tmp"/r.trace.* | wc -l)" -ge 3 ] || { echo "FAIL: not three child traces:"; ls "$tmp"; exit 1; }
for cmd in "advise --no-measure" "top --by-process" "tree --by-process"; do
	# shellcheck disable=SC2086
	"$ap" $cmd "$tmp/r.trace" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL $cmd: exit $?"; cat "$tmp/err"; fail=1; continue; }
	n=$(grep -c "warning: .*escname: no line information" "$tmp/err")
	dup=$(sort "$tmp/err" | uniq -d)
	if [ "$n" != 1 ] || [ -n "$dup" ]; then
		echo "FAIL $cmd: the warning $n times, or a line said twice:"; cat "$tmp/err"; fail=1
	else
		echo "ok $cmd: the warning once"
	fi
done
# advise's note on sites without symbols (its sites are the program's,
# a stripped copy of it here), once for the three processes, not thrice
# (a shell loop of 642 processes said it 535 times)
if command -v strip >/dev/null && strip -o "$tmp/stripped" "$prog"; then
	"$ap" record -q --all -o "$tmp/s.trace" -- /bin/sh -c \
		'"$1" >/dev/null; "$1" >/dev/null; "$1" >/dev/null' sh "$tmp/stripped" ||
		{ echo "FAIL record stripped"; exit 1; }
	"$ap" advise --no-measure "$tmp/s.trace" >"$tmp/out" 2>"$tmp/err" || { echo "FAIL advise stripped"; fail=1; }
	n=$(grep -c "note: .* without symbols, in $tmp/stripped " "$tmp/err")
	if [ "$n" != 1 ] || [ -n "$(sort "$tmp/err" | uniq -d)" ]; then
		echo "FAIL advise: the note on sites without symbols $n times, or a line said twice:"
		cat "$tmp/err"; fail=1
	else
		echo "ok advise: the note on sites without symbols once"
	fi
fi
# An output that cannot be written is said alone, before the trace is
# read (not after the warnings and the work of the view).
for cmd in "flamegraph -o $tmp/no/such/dir/x.svg" "html -o $tmp/no/such/dir/x.html" \
	"export -o $tmp/no/such/dir/x.pb.gz" "flamegraph -o $tmp"; do
	# shellcheck disable=SC2086
	"$ap" $cmd "$tmp/r.trace" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc != 1 ] || [ "$(wc -l <"$tmp/err")" != 1 ] ||
		! grep -Eq "^allocprof: $tmp(/no/such/dir/x\.[a-z.]+)?: (No such file or directory|Is a directory)\$" "$tmp/err"; then
		echo "FAIL $cmd: exit $rc, not 1 with one line naming the output:"; cat "$tmp/err"; fail=1
	else
		echo "ok $cmd: one line"
	fi
done
exit $fail
