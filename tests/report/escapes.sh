#!/bin/bash
# Names the profiled program chose reach no terminal as controls (issue
# 24): a program whose functions are named with ESC sequences (window
# title, clear screen, OSC 52), a newline, a tab, U+202E, a C1 control,
# DEL and bytes that are not UTF-8 is recorded, and the text of every
# text command (and of the TUI's batch mode) holds none of them raw: each
# shows escaped (\x1b, \u202e), on its own row. JSON keeps the names (as
# JSON escapes). Usage: escapes.sh ALLOCPROF ESCNAME
set -u
ap=$1 prog=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-escapes.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C.UTF-8
fail=0
command -v objcopy >/dev/null || { echo "SKIP: no objcopy"; exit 77; }
objcopy \
	--redefine-sym "ev_title_=title"$'\e]0;pwned\a'"x" \
	--redefine-sym "ev_clear_=clear"$'\e[2J\e[H'"x" \
	--redefine-sym "ev_clip_=clip"$'\e]52;c;cHduZWQ=\a'"x" \
	--redefine-sym "ev_nl_=new"$'\n'"line" \
	--redefine-sym "ev_tab_=tab"$'\t'"bed" \
	--redefine-sym "ev_bidi_=bidi"$'\u202e'"evil" \
	--redefine-sym "ev_c1_=c1"$'\xc2\x9b'"csi" \
	--redefine-sym "ev_del_=del"$'\x7f'"ete" \
	--redefine-sym "ev_inval_=inval"$'\xff\xfe'"id" \
	"$prog" "$tmp/escname" || { echo "FAIL objcopy"; exit 1; }
"$ap" record -q --all -o "$tmp/a.trace" -- "$tmp/escname" || { echo "FAIL record"; exit 1; }
"$ap" record -q --all -o "$tmp/b.trace" -- "$tmp/escname" 2 || { echo "FAIL record"; exit 1; }

# check WHAT FILE: no control byte but \n and \t (pprof's peek header
# has tabs), no DEL, no C1, no bidi
# formatting character, valid UTF-8; and (with ROWS) the escaped names
# each on a row of their own
check() {
	/usr/bin/python3 - "$@" <<'PY' || fail=1
import re, sys
what, path = sys.argv[1], sys.argv[2]
rows = len(sys.argv) > 3
data = open(path, "rb").read()
bad = []
try:
    text = data.decode("utf-8")
except UnicodeDecodeError as e:
    sys.exit("FAIL %s: not UTF-8: %s" % (what, e))
for c in sorted(set(text)):
    o = ord(c)
    if (o < 0x20 and c not in "\n\t") or 0x7f <= o <= 0x9f or c in "\u061c\u200e\u200f" \
            or 0x202a <= o <= 0x202e or 0x2066 <= o <= 0x2069:
        bad.append("U+%04X" % o)
if bad:
    sys.exit("FAIL %s: raw %s in its output" % (what, ", ".join(bad)))
if rows:
    want = [r"title\x1b]0;pwned\x07x", r"clear\x1b[2J\x1b[Hx", r"clip\x1b]52;c;cHduZWQ=\x07x",
            r"new\x0aline", r"bidi\u202eevil", r"c1\u009bcsi",
            r"del\u007fete", r"inval\xff\xfeid"]
    lines = text.split("\n")
    for w in want:
        if not any(w in l for l in lines):
            sys.exit("FAIL %s: no row with %s:\n%s" % (what, w, text))
print("ok: %s" % what)
PY
}

run() { # ROWS? ARGS...: one text command's output, checked
	rows=$1
	shift
	if ! "$ap" "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL allocprof $*: exit $?"; cat "$tmp/err"; fail=1; return
	fi
	if [ "$rows" = rows ]; then
		check "allocprof $*" "$tmp/out" rows
	else
		check "allocprof $*" "$tmp/out"
	fi
	check "allocprof $* (stderr)" "$tmp/err"
}

run rows top "$tmp/a.trace"
run rows top --lines "$tmp/a.trace"
run rows peek . "$tmp/a.trace"
run rows tree "$tmp/a.trace"
run rows list . "$tmp/a.trace"
run rows advise -n 0 "$tmp/a.trace"
run - stats "$tmp/a.trace"
run - diff "$tmp/a.trace" "$tmp/b.trace"
grep -qF 'title\x1b]0;pwned\x07x' "$tmp/out" || { echo "FAIL diff: no escaped name"; cat "$tmp/out"; fail=1; }
run - timeline --sites 20 "$tmp/a.trace"
grep -qF 'new\x0aline' "$tmp/out" || { echo "FAIL timeline: no escaped name"; cat "$tmp/out"; fail=1; }
# the TUI's batch mode draws the cells ncurses draws
run - tui --batch "$tmp/a.trace"
grep -qF 'title\x1b]0;pwned\x07x' "$tmp/out" || { echo "FAIL tui --batch: no escaped name"; cat "$tmp/out"; fail=1; }

# JSON: the names as they are, JSON-escaped (jansson), nothing raw
"$ap" top --json "$tmp/a.trace" >"$tmp/j" 2>"$tmp/err" || { echo "FAIL top --json"; fail=1; }
check "allocprof top --json" "$tmp/j"
/usr/bin/python3 - "$tmp/j" <<'PY' || fail=1
import json, sys
names = {r["name"] for r in json.load(open(sys.argv[1]))["rows"]}
for want in ["title\x1b]0;pwned\x07x", "new\nline", "bidi\u202eevil", "c1\x9bcsi", "del\x7fete"]:
    if want not in names:
        sys.exit("FAIL top --json: no %r in %r" % (want, sorted(names)))
print("ok: top --json keeps the names")
PY
exit $fail
