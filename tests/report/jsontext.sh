#!/bin/sh
# Every view's JSON holds a name that is not UTF-8 (testdata/oddname: a
# symbol with a 0xff byte, a control character and <&>), written with
# U+FFFD, instead of failing or leaving the row out (jansson refuses such
# strings). Usage: jsontext.sh ALLOCPROF ODDNAME
set -u
ap=$1 prog=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-jsontext.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ALLOCPROF_NO_PROGRESS=1
fail=0
"$ap" record -q --all -o "$tmp/odd.trace" -- "$prog" || { echo "FAIL record"; exit 1; }
while read -r what; do
	# shellcheck disable=SC2086
	if ! "$ap" $what "$tmp/odd.trace" >"$tmp/out.json" 2>"$tmp/err"; then
		echo "FAIL allocprof $what: exit $?"; cat "$tmp/err"; fail=1; continue
	fi
	/usr/bin/python3 - "$tmp/out.json" "$what" <<'PY' || fail=1
import json, sys
what = sys.argv[2]
try:
    text = json.dumps(json.load(open(sys.argv[1], encoding="utf-8")), ensure_ascii=False)
except Exception as e:
    sys.exit("FAIL allocprof %s: not JSON: %s" % (what, e))
if "odd\ufffd<&>" not in text:
    sys.exit("FAIL allocprof %s: no odd\\ufffd<&>name in its JSON" % what)
print("ok: allocprof %s" % what)
PY
done <<EOF2
top --json
top --json --lines
list --json odd
peek --json odd
tree --json
diff --json $tmp/odd.trace
advise --json
export --format=json
export --json
timeline --format=json --sites 3
timeline -json --sites 3
flamegraph --json
EOF2
# the format's own flags say what --format does (top's --json, pprof's
# -svg and -proto)
for a in "timeline --format=FMT|timeline --FMT|json csv svg text" \
	 "export -o - --format=FMT|export -o - -FMT|json folded"; do
	IFS='|' read -r long short fmts <<EOF3
$a
EOF3
	for f in $fmts; do
		# shellcheck disable=SC2086
		"$ap" $(echo "$long" | sed "s/FMT/$f/") "$tmp/odd.trace" >"$tmp/a" 2>&1
		# shellcheck disable=SC2086
		"$ap" $(echo "$short" | sed "s/FMT/$f/") "$tmp/odd.trace" >"$tmp/b" 2>&1
		if [ -s "$tmp/a" ] && cmp -s "$tmp/a" "$tmp/b"; then
			echo "ok: $(echo "$short" | sed "s/FMT/$f/") = --format=$f"
		else
			echo "FAIL: $(echo "$short" | sed "s/FMT/$f/") differs from --format=$f"; fail=1
		fi
	done
done
"$ap" export -proto -o "$tmp/odd.pb.gz" "$tmp/odd.trace" 2>/dev/null &&
	"$ap" export --format=pprof -o "$tmp/odd2.pb.gz" "$tmp/odd.trace" 2>/dev/null &&
	cmp -s "$tmp/odd.pb.gz" "$tmp/odd2.pb.gz" && echo "ok: export -proto = --format=pprof" ||
	{ echo "FAIL: export -proto differs from --format=pprof"; fail=1; }
exit $fail
