#!/bin/sh
# `allocprof top` and `list` as a user meets them: -h, and one clear line
# with the right exit status for each kind of bad input (1 failure, 2 usage).
# usage: cli.sh ALLOCPROF MKTRACE
set -u
ap=$1 mktrace=$2
export LC_ALL=C ALLOCPROF_NO_PROGRESS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
"$mktrace" "$tmp/fx.trace" || exit 1

# expect STATUS STDERR_PATTERN ARGS...: exit status STATUS, and stderr is
# one line matching the grep -E pattern (empty pattern: stderr empty).
expect() {
	want=$1 pat=$2
	shift 2
	"$ap" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$got" != "$want" ]; then
		echo "FAIL allocprof $*: exit $got, expected $want"; cat "$tmp/err"; fail=1
	elif [ -z "$pat" ] && [ -s "$tmp/err" ]; then
		echo "FAIL allocprof $*: unexpected stderr:"; cat "$tmp/err"; fail=1
	elif [ -n "$pat" ] && { [ "$lines" != 1 ] || ! grep -Eq "$pat" "$tmp/err"; }; then
		echo "FAIL allocprof $*: stderr is not one line matching '$pat':"; cat "$tmp/err"; fail=1
	fi
}

expect 0 '' top -h
grep -q '^usage: allocprof top \[OPTIONS\] TRACE' "$tmp/out" || { echo "FAIL top -h: no usage line"; fail=1; }
grep -q -- '--alloc_objects' "$tmp/out" || { echo "FAIL top -h: no --alloc_objects"; fail=1; }
expect 0 '' list --help
grep -q '^usage: allocprof list \[OPTIONS\] REGEX TRACE' "$tmp/out" || { echo "FAIL list -h: no usage line"; fail=1; }
grep -q -- '--source-path' "$tmp/out" || { echo "FAIL list -h: no --source-path"; fail=1; }
expect 0 '' help top
grep -q '^usage: allocprof top' "$tmp/out" || { echo "FAIL help top"; fail=1; }

# usage errors: exit 2
expect 2 "^allocprof: top: unknown option '--bogus' \(see 'allocprof top -h'\)$" top --bogus "$tmp/fx.trace"
expect 2 "^allocprof: top: unknown option '-x'" top -x "$tmp/fx.trace"
expect 2 "^allocprof: top: option '-n' needs a value" top "$tmp/fx.trace" -n
expect 2 "^allocprof: top: option '--nodecount' needs a value" top "$tmp/fx.trace" --nodecount
expect 2 "^allocprof: top: option '-nodecount' needs a value" top "$tmp/fx.trace" -nodecount
expect 2 "^allocprof: top: bad node count 'many'" top -n many "$tmp/fx.trace"
expect 2 "^allocprof: top: bad node count 'x'" top -nodecount=x "$tmp/fx.trace"
expect 2 "^allocprof: top: unknown sample index 'bytes'" top --sample_index bytes "$tmp/fx.trace"
expect 2 "^allocprof: list: unknown sample index 'bytes'" list -sample_index=bytes walk "$tmp/fx.trace"
expect 2 "^allocprof: top: bad node fraction '2'" top --nodefraction 2 "$tmp/fx.trace"
expect 2 "^allocprof: top: bad --trim value 'maybe'" top -trim=maybe "$tmp/fx.trace"
expect 2 "^allocprof: top: no trace given" top
# several traces are one run; a path given twice is read once
cp "$tmp/fx.trace" "$tmp/fx2.trace"
expect 0 '' top --json "$tmp/fx.trace" "$tmp/fx2.trace"
two=$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["total"]))' "$tmp/out")
expect 0 '' top --json "$tmp/fx.trace" "$tmp/fx.trace"
one=$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["total"]))' "$tmp/out")
[ "$two" = "$((2 * one))" ] || { echo "FAIL top of two traces: total $two, one trace $one"; fail=1; }
expect 0 '' top --by-process "$tmp/fx.trace" "$tmp/fx2.trace"
[ "$(grep -c '^==> .*fx2\?\.trace: pid ' "$tmp/out")" = 2 ] || { echo "FAIL top --by-process: no two headings"; cat "$tmp/out"; fail=1; }
expect 2 "^allocprof: tui: --by-process: " tui --by-process "$tmp/fx.trace"
# a child trace that cannot be read is named, with the way out
printf 'ALLOCPRF' >"$tmp/fx.trace.4242"
expect 1 "^allocprof: .*/fx.trace.4242: truncated trace: the file ends inside its preamble \(a child trace of .*/fx.trace; --no-children reads .*/fx.trace alone\)$" top "$tmp/fx.trace"
expect 0 '' top --no-children "$tmp/fx.trace"
# a file of a child's name that is no trace, or a symbolic link (put
# there by someone else, in a directory others can write: issue 24), is
# not one of the run's
printf 'not a trace' >"$tmp/fx.trace.4242"
ln -s "$tmp/fx2.trace" "$tmp/fx.trace.4243"
expect 0 '' top --json "$tmp/fx.trace"
alone=$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["total"]))' "$tmp/out")
[ "$alone" = "$one" ] || { echo "FAIL top with a planted file and link: total $alone, the trace alone $one"; fail=1; }
rm "$tmp/fx.trace.4242" "$tmp/fx.trace.4243"
expect 2 "^allocprof: list: need a REGEX and a TRACE" list walk
expect 2 "^allocprof: list: unknown option '--lines'" list --lines walk "$tmp/fx.trace"

# failures: exit 1, one line
expect 1 "^allocprof: $tmp/missing.trace: " top "$tmp/missing.trace"
echo "not a trace at all" >"$tmp/text"
expect 1 "^allocprof: $tmp/text: not an allocprof trace" top "$tmp/text"
# a device is no trace, and reading one would not end (/dev/zero: until
# memory runs out); a pipe of something else is refused once it shows
# (issue 24): both under a memory limit, so that a regression fails
# instead of taking the machine's memory
ap_real=$ap
ap=$tmp/limited
# (AddressSanitizer reserves terabytes of address space for its shadow:
# no memory limit in a sanitized build, only the time limit)
limit='ulimit -v 4000000; '
[ -n "${SANITIZED:-}" ] && limit=
printf '#!/bin/sh\n%sexec timeout 20 %s "$@"\n' "$limit" "$ap_real" >"$ap"
chmod +x "$ap"
expect 1 "^allocprof: /dev/zero: is a character device, not a trace file$" stats /dev/zero
expect 1 "^allocprof: /dev/zero: is a character device, not a trace file$" top /dev/zero
mkfifo "$tmp/fifo"
cat /dev/zero >"$tmp/fifo" 2>/dev/null &
writer=$!
expect 1 "^allocprof: $tmp/fifo: not an allocprof trace" stats "$tmp/fifo"
kill $writer 2>/dev/null # still waiting for a reader if allocprof never opened it
wait
# a FIFO nobody writes to: refused at once, not waited on for ever (the
# time limit makes a regression fail)
rm "$tmp/fifo"
mkfifo "$tmp/fifo"
for cmd in stats top "list walk" tree timeline flamegraph html advise symbols "export --format=folded"; do
	# shellcheck disable=SC2086
	expect 1 "^allocprof: $tmp/fifo: a FIFO with no writer, not a trace file$" $cmd "$tmp/fifo"
done
expect 2 "^allocprof: $tmp/fifo: a FIFO with no writer, not a trace file$" diff "$tmp/fifo" "$tmp/fx.trace"
expect 1 "^allocprof: $tmp/fifo: not a regular file$" tui --batch --follow "$tmp/fifo"
ap=$ap_real
expect 2 "^allocprof: top: --focus: bad regex '\(': " top --focus '(' "$tmp/fx.trace"
expect 2 "^allocprof: top: --ignore: bad regex '\[': " top --ignore '[' "$tmp/fx.trace"
expect 2 "^allocprof: list: REGEX: bad regex '\(': " list '(' "$tmp/fx.trace"
expect 2 "^allocprof: top: --hide: bad regex '\(\?<': " top --hide '(?<' "$tmp/fx.trace"

# pprof's spellings: one dash or two, '=' or the next argument, one
# parser for every view (values checked in golden.sh)
for args in "-nodecount=3" "--nodecount=3" "-nodecount 3" "-n 3" "-n3"; do
	# shellcheck disable=SC2086
	"$ap" top $args "$tmp/fx.trace" >"$tmp/out" 2>&1 &&
		grep -q '^Showing top 3 nodes' "$tmp/out" || { echo "FAIL top $args"; cat "$tmp/out"; fail=1; }
done
for args in "--sample_index=alloc_objects" "--sample_index alloc_objects" \
	"-sample_index=alloc_objects" "--sample-index alloc_objects" "-alloc_objects"; do
	# shellcheck disable=SC2086
	for cmd in top "list walk"; do
		"$ap" $cmd $args "$tmp/fx.trace" >"$tmp/out" 2>&1 &&
			grep -Eq '^(Type: alloc_objects|Total: 159)$' "$tmp/out" ||
			{ echo "FAIL $cmd $args"; cat "$tmp/out"; fail=1; }
	done
done
# pprof's regex dialect (RE2), in every regex option
"$ap" top --focus '(?i)^WALK$' "$tmp/fx.trace" >"$tmp/out" 2>&1 &&
	grep -q '  walk$' "$tmp/out" || { echo "FAIL top --focus (?i)"; cat "$tmp/out"; fail=1; }
"$ap" list '(?i)^WALK$' "$tmp/fx.trace" >"$tmp/out" 2>&1 &&
	grep -q '^ROUTINE =* walk ' "$tmp/out" || { echo "FAIL list (?i)"; cat "$tmp/out"; fail=1; }
"$ap" top --drop-frames '(?i)^WRAP_ALLOC$' "$tmp/fx.trace" >"$tmp/out" 2>&1 &&
	! grep -q 'wrap_alloc' "$tmp/out" || { echo "FAIL top --drop-frames (?i)"; cat "$tmp/out"; fail=1; }
expect 1 "^allocprof: no matches found for regexp: no_such_function$" list no_such_function "$tmp/fx.trace"
expect 1 "^allocprof: $tmp/missing.trace: " list walk "$tmp/missing.trace"

# A truncated trace (the END chunk cut off): a warning, then the views.
size=$(wc -c <"$tmp/fx.trace")
head -c $((size - 10)) "$tmp/fx.trace" >"$tmp/cut.trace"
expect 0 "^allocprof: warning: $tmp/cut.trace: truncated trace" top "$tmp/cut.trace"
grep -q ' alloc_big$' "$tmp/out" || { echo "FAIL truncated: no alloc_big row"; cat "$tmp/out"; fail=1; }

# Progress: nothing when stderr is not a terminal; on a terminal (script(1)
# gives one) the reading and symbolizing steps are drawn, then erased.
env -u ALLOCPROF_NO_PROGRESS "$ap" top "$tmp/fx.trace" >/dev/null 2>"$tmp/err"
[ -s "$tmp/err" ] && { echo "FAIL progress drawn without a terminal:"; cat "$tmp/err"; fail=1; }
if command -v script >/dev/null; then
	env -u ALLOCPROF_NO_PROGRESS script -qec "'$ap' top '$tmp/fx.trace' >/dev/null" /dev/null >"$tmp/tty" 2>&1
	grep -q 'reading: 100%' "$tmp/tty" && grep -q 'symbolizing: 100%' "$tmp/tty" ||
		{ echo "FAIL no progress on a terminal:"; od -c "$tmp/tty" | head; fail=1; }
fi

# A binary rebuilt since recording: the symbolizer's warning, then the
# views without its names: all of its addresses are one node, [mktrace],
# as pprof shows the export's unsymbolized mapping.
"$mktrace" "$tmp/rebuilt.trace" 1 rebuilt || exit 1
expect 0 "^allocprof: warning: .*: build-id differs from the recorded one" top "$tmp/rebuilt.trace"
grep -q '%  \[mktrace\]$' "$tmp/out" || { echo "FAIL rebuilt: no [mktrace] node:"; cat "$tmp/out"; fail=1; }

# timeline and diff on the fixture (here also under ASan/UBSan): every
# format; a trace against itself changes nothing and passes any gate.
expect 0 '' timeline "$tmp/fx.trace"
grep -q "^In use over time (peak " "$tmp/out" || { echo "FAIL timeline text"; cat "$tmp/out"; fail=1; }
for f in csv json svg; do
	expect 0 '' timeline --format=$f --buckets 7 "$tmp/fx.trace"
done
[ "$(grep -c . "$tmp/out")" -gt 5 ] || { echo "FAIL timeline svg: too short"; fail=1; }
expect 2 "^allocprof: timeline: --buckets wants 1 to 100000, not '0' \(see 'allocprof timeline -h'\)$" timeline --buckets 0 "$tmp/fx.trace"
expect 0 '' diff --fail-above alloc_objects=+0% "$tmp/fx.trace" "$tmp/fx.trace"
grep -q '^(no node changed)$' "$tmp/out" || { echo "FAIL diff of a trace with itself"; cat "$tmp/out"; fail=1; }
expect 0 '' diff --json --lines "$tmp/fx.trace" "$tmp/fx.trace"
expect 2 "^allocprof: diff: two traces are needed, BASE and NEW \(see 'allocprof diff -h'\)$" diff "$tmp/fx.trace"

expect 0 '' peek alloc_big "$tmp/fx.trace"
grep -q '| alloc_big$' "$tmp/out" || { echo "FAIL peek: no alloc_big line"; cat "$tmp/out"; fail=1; }
expect 0 '' peek --json --lines . "$tmp/fx.trace"
expect 2 "^allocprof: peek: a REGEX and a TRACE are needed \(see 'allocprof peek -h'\)$" peek "$tmp/fx.trace"
expect 2 "^allocprof: peek: bad regex" peek '(' "$tmp/fx.trace"
expect 0 '' tree "$tmp/fx.trace"
grep -q '| alloc_big$' "$tmp/out" || { echo "FAIL tree: no alloc_big line"; cat "$tmp/out"; fail=1; }
expect 0 '' tree --json --files -n 1 "$tmp/fx.trace"
expect 2 "^allocprof: tree: no trace given \(see 'allocprof tree -h'\)$" tree
expect 2 "^allocprof: tree: bad edge fraction 'x'" tree --edgefraction=x "$tmp/fx.trace"

# A HOME that is not there is not made for the cost cache (broad20: advise
# as root with HOME=/nonexistent made /nonexistent/.cache).
HOME="$tmp/no-home" XDG_CACHE_HOME= expect 1 "^allocprof: calibrate: no place for the cache: set XDG_CACHE_HOME, or HOME to a directory that exists, or use -o$" calibrate
[ -e "$tmp/no-home" ] && { echo "FAIL calibrate made the missing HOME $tmp/no-home"; fail=1; }

# The measured replay's share to write (review22: a bad one was dropped
# without a word, and the fit ran instead).
for v in abc 2 -0.5; do
	ALLOCPROF_REPLAY_TOUCH=$v expect 2 "^allocprof: ALLOCPROF_REPLAY_TOUCH: '$v' is not a share of each block from 0 to 1$" advise "$tmp/fx.trace"
done
# A duration or a size that is not a number (strtod reads "nan": it
# passed the checks, and became whatever the cast of a NaN gives)
for v in nan NaN -nan; do
	expect 2 "measure-time wants a duration like 5s, not '$v'" advise --measure-time "$v" "$tmp/fx.trace"
	expect 2 "max-keep wants a size like 64K, not '$v'" advise --max-keep "$v" "$tmp/fx.trace"
done
# and by every command that measures (review23: try and the TUI went on
# and fitted, without a word)
for c in try html "tui --batch"; do
	ALLOCPROF_REPLAY_TOUCH=abc expect 2 "^allocprof: ALLOCPROF_REPLAY_TOUCH: 'abc' is not a share of each block from 0 to 1$" $c "$tmp/fx.trace"
done

# JSON parses, with numbers as numbers.
"$ap" top --json "$tmp/fx.trace" >"$tmp/top.json" &&
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d["total"], int) and d["rows"][0]["name"] == "alloc_big"' "$tmp/top.json" ||
	{ echo "FAIL top --json does not parse"; fail=1; }

# One option syntax for every report command: pprof's -name as well as
# --name, and an unknown option named as it was typed (try and calibrate
# used to name the command; advise and stats read -json as -j).
for c in top list peek tree stats advise timeline flamegraph html export diff try tui calibrate snapshot symbols; do
	expect 2 "^allocprof: $c: unknown option '-bogus-opt' \\(see 'allocprof $c -h'\\)\$" \
		$c -bogus-opt "$tmp/fx.trace"
	expect 2 "^allocprof: $c: unknown option '-x' \\(see 'allocprof $c -h'\\)\$" \
		$c -x "$tmp/fx.trace"
done
for c in stats advise; do
	"$ap" $c -json "$tmp/fx.trace" >"$tmp/one.json" 2>"$tmp/err" &&
		"$ap" $c --json "$tmp/fx.trace" >"$tmp/two.json" 2>>"$tmp/err" ||
		{ echo "FAIL $c -json / --json:"; cat "$tmp/err"; fail=1; }
	/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/one.json" ||
		{ echo "FAIL $c -json: not JSON"; fail=1; }
done

exit $fail
