#!/bin/sh
# The peak a followed view ends on (tui --follow while record writes the
# trace) is stats' on the finished trace. A followed view replays the one
# trace it follows: its process alone, whose END is its last record, so
# no process ends inside it; the ends a whole run's replay drops blocks
# at (ap_replay's `exited`) are other processes', of the child traces
# the view leaves out, and says it leaves out. So: testdata/peak alone
# (64 MiB built and freed, 488,000 bytes kept) ends on stats' peak; sh
# running it twice ends on stats --no-children's (sh's own), not the run's.
# usage: follow-peak.sh ALLOCPROF PEAK
set -u
ap=$1 peak=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
py=/usr/bin/python3
[ -x "$py" ] || py=python3
# the peak_space index: the fourth after alloc_space (s cycles them)
keys=ssss

# follow NAME CMD...: records CMD into $tmp/NAME.trace while tui --follow
# --batch follows it from its first bytes; the view's last screen in
# $tmp/NAME.screen
follow() {
	name=$1
	shift
	"$ap" record -q --all -o "$tmp/$name.trace" -- "$@" >/dev/null 2>"$tmp/$name.rec" &
	rec=$!
	i=0
	while [ ! -s "$tmp/$name.trace" ] && [ $i -lt 400 ]; do
		sleep 0.01
		i=$((i + 1))
	done
	"$ap" tui --follow --batch --size 200x12 --keys "$keys" "$tmp/$name.trace" \
		>"$tmp/$name.screen" 2>"$tmp/$name.err" ||
		{ echo "FAIL $name: tui --follow: $(cat "$tmp/$name.err")"; fail=1; }
	wait $rec || { echo "FAIL $name: record: $(cat "$tmp/$name.rec")"; fail=1; }
}

# total SCREEN: the Total of the view's title line
total() {
	sed -n '1s/.*Type: peak_space   Total: \([^ ]*\) .*/\1/p' "$1"
}

# stats_peak TRACE [--no-children]: stats' peak_inuse_space, as the views
# write bytes (pprof's ScaledLabel: 1024s, "%.2f" without ".00")
stats_peak() {
	"$ap" stats --json "$@" | "$py" -c '
import json, sys
b = json.load(sys.stdin)["peak_inuse_space"]
u = 0
while u < 4 and b >= 1024 ** (u + 1):
    u += 1
s = "%.2f" % (b / 1024 ** u)
s = s[:-3] if s.endswith(".00") else s
print(s + ["B", "kB", "MB", "GB", "TB"][u])'
}

follow one "$peak"
got=$(total "$tmp/one.screen") want=$(stats_peak "$tmp/one.trace")
[ -n "$got" ] && [ "$got" = "$want" ] ||
	{ echo "FAIL peak alone: the followed view's peak '$got', stats' $want"; cat "$tmp/one.screen"; fail=1; }
[ "$want" = 64MB ] || { echo "FAIL peak alone: stats' peak $want, not 64MB"; fail=1; }

follow two sh -c '"$0"; "$0"' "$peak"
got=$(total "$tmp/two.screen") want=$(stats_peak "$tmp/two.trace" --no-children)
run=$(stats_peak "$tmp/two.trace")
[ -n "$got" ] && [ "$got" = "$want" ] ||
	{ echo "FAIL sh: the followed view's peak '$got', stats --no-children's $want"; cat "$tmp/two.screen"; fail=1; }
[ "$run" != "$got" ] || { echo "FAIL sh: the whole run's peak is sh's ($run)"; fail=1; }
tail -n 1 "$tmp/two.screen" | grep -q "for its process alone (2 child traces" ||
	{ echo "FAIL sh: the status line: $(tail -n 1 "$tmp/two.screen")"; fail=1; }
[ $fail = 0 ] && echo "ok: followed to its end, peak $(total "$tmp/one.screen") alone; sh's $got of a run of $run"
exit $fail
