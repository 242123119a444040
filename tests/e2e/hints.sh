#!/bin/bash
# First-run hints (issue 12 §3), one "allocprof: note:" line on stderr:
# - a sampled trace of a program that allocates less than the rate
#   (`ls`): top, list, export and tui say what the program allocated (the
#   END record's exact calls and bytes, as `stats` shows them) and to
#   record with --all or --rate (advise too); a --all trace gets no such note;
# - a stripped binary: top names the module whose frames lack symbols and
#   says how to get them; the unstripped binary gets no note.
# Environment as for e2e.sh.
. "$(dirname "$0")/../lib.sh"
tmp=$work
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
py=${E2E_PYTHON:-python3}

"$ALLOCPROF" record -o "$tmp/ls.trace" -- ls / >/dev/null 2>&1 || fail "record ls"
"$ALLOCPROF" stats --json "$tmp/ls.trace" >"$tmp/ls.json" || fail "stats"
calls=$("$py" "$E2E_DIR/e2e.py" field "$tmp/ls.json" calls)
samples=$("$py" "$E2E_DIR/e2e.py" field "$tmp/ls.json" samples)
echo "ls: $calls calls, $samples samples"
[ "$calls" -gt 0 ] || fail "ls made no allocation call?"
want="^allocprof: note: (no allocation was sampled|only $samples allocations? w[a-z]* sampled): the program allocated [0-9.]+[kM]?B in $calls calls, (under|at) one sample per 512kB on average; record with --all \(every allocation\) or a smaller --rate$"
for cmd in top "list main" "export --format=folded" "tui --batch --keys q" advise; do
	# shellcheck disable=SC2086
	"$ALLOCPROF" $cmd "$tmp/ls.trace" >/dev/null 2>"$tmp/err"
	st=$?
	# list finds no function in a trace without samples (exit 1, its
	# error line after the note), or main when ls's one sample is there;
	# the others succeed
	case $cmd in list*) [ "$st" = 0 ] || [ "$st" = 1 ] ;; *) [ "$st" = 0 ] ;; esac ||
		fail "$cmd: exit $st"
	grep -Eq "$want" "$tmp/err" || { fail "$cmd: no sampling note"; cat "$tmp/err"; }
	# one sampling note (top adds the symbols note when ls's sample has no
	# symbols: /usr/bin/ls is stripped)
	[ "$(grep -c 'note: .* sampled:' "$tmp/err")" = 1 ] || { fail "$cmd: not one sampling note"; cat "$tmp/err"; }
done

"$ALLOCPROF" record --all -o "$tmp/ls-all.trace" -- ls / >/dev/null 2>&1 || fail "record --all ls"
"$ALLOCPROF" top "$tmp/ls-all.trace" >/dev/null 2>"$tmp/err" || fail "top ls --all"
grep -q 'sampled' "$tmp/err" && { fail "a --all trace got the sampling note"; cat "$tmp/err"; }
# advise names the C library function ls called, not glibc's internal
# alias of it ("via __GI_fwrite_unlocked", "via __GI_setlocale")
"$ALLOCPROF" advise --no-measure -n 0 "$tmp/ls-all.trace" >"$tmp/out" 2>/dev/null || fail "advise ls --all"
grep -q '(via fwrite_unlocked)' "$tmp/out" || { fail "advise ls: no site via fwrite_unlocked"; grep via "$tmp/out"; }
grep -q '(via __GI_' "$tmp/out" && { fail "advise ls: a site via glibc's internal alias"; grep via "$tmp/out"; }
# and so it does once the program's file is gone (its PLT, which names the
# import, with it): the C library's exported name, not its debug
# information's ("via __printf")
cp "$TESTDATA_BUILD/demo" "$tmp/demo-gone"
"$ALLOCPROF" record -q --all -o "$tmp/gone.trace" -- "$tmp/demo-gone" >/dev/null 2>&1 || fail "record demo-gone"
"$ALLOCPROF" advise --no-measure -n 0 "$tmp/gone.trace" >"$tmp/out" 2>/dev/null || fail "advise demo-gone"
grep -q '(via printf)' "$tmp/out" || { fail "advise demo: no site via printf"; grep via "$tmp/out"; }
rm "$tmp/demo-gone"
"$ALLOCPROF" advise --no-measure -n 0 "$tmp/gone.trace" >"$tmp/out2" 2>/dev/null || fail "advise demo, its file gone"
expect_eq "advise demo, its file gone: the via names" "$(grep -o '(via [^)]*)' "$tmp/out2" | sort)" \
	"$(grep -o '(via [^)]*)' "$tmp/out" | sort)"

demo=$TESTDATA_BUILD/demo
"$ALLOCPROF" record --all -o "$tmp/demo.trace" -- "$demo" >/dev/null 2>&1 || fail "record demo"
"$ALLOCPROF" top "$tmp/demo.trace" >/dev/null 2>"$tmp/err" || fail "top demo"
[ -s "$tmp/err" ] && { fail "top on the unstripped demo printed a note"; cat "$tmp/err"; }
objcopy --strip-all "$demo" "$tmp/demo-stripped"
"$ALLOCPROF" record --all -o "$tmp/stripped.trace" -- "$tmp/demo-stripped" >/dev/null 2>&1 ||
	fail "record stripped demo"
"$ALLOCPROF" top "$tmp/stripped.trace" >"$tmp/out" 2>"$tmp/err" || fail "top stripped"
grep -Eq "^allocprof: note: [0-9]+% of alloc_space goes through frames without symbols, in $tmp/demo-stripped \([0-9]+%\)(, .*)?: install their -dbgsym packages .*--debug-dir.*debuginfod" "$tmp/err" ||
	{ fail "top on a stripped binary: no symbols note"; cat "$tmp/err"; }
# (its addresses are one node, as pprof shows a mapping without names)
grep -q '%  \[demo-stripped\]$' "$tmp/out" || fail "the stripped demo's frames are not one [demo-stripped] node"
# advise names such sites demo-stripped+0x...: it says why, and how to
# get their names, as top does (the unstripped demo: no note)
"$ALLOCPROF" advise --no-measure "$tmp/stripped.trace" >"$tmp/out" 2>"$tmp/err" || fail "advise stripped"
grep -q '^1\. demo-stripped+0x' "$tmp/out" || { fail "advise's sites of the stripped demo are not addresses"; cat "$tmp/out"; }
grep -Eq "^allocprof: note: [0-9]+% of the bytes are allocated at sites without symbols, in $tmp/demo-stripped \([0-9]+%\)(, .*)?: install their -dbgsym packages .*--debug-dir.*debuginfod" "$tmp/err" ||
	{ fail "advise on a stripped binary: no symbols note"; cat "$tmp/err"; }
"$ALLOCPROF" advise --no-measure "$tmp/demo.trace" >/dev/null 2>"$tmp/err" || fail "advise demo"
grep -q 'without symbols' "$tmp/err" && { fail "advise on the unstripped demo: a symbols note"; cat "$tmp/err"; }
exit $failed
