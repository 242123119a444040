#!/bin/sh
# The cost table advise uses: a cache that is not a regular file (a FIFO
# hung advise), one with implausible values (a negative pool cost printed
# "pooling would cost ~18.7s more"), and one from before dates and
# spreads are kept are each refused with one line and measured again; the
# header says when the table was measured and its spread. A fixed table
# (ALLOCPROF_TEST_COSTS) with an implausible value is an error.
# usage: costs.sh TEST_ADVISE ALLOCPROF
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset ALLOCPROF_TEST_COSTS
export XDG_CACHE_HOME="$tmp/cache"
cache="$XDG_CACHE_HOME/allocprof/costs.json"
mkdir -p "$XDG_CACHE_HOME/allocprof"
"$1" --write "$tmp/t.trace"
fail=0

# advise on the trace with whatever is at the cache path; its stderr in
# $tmp/err, stdout in $tmp/out. Never waits more than 30 s.
advise() {
	if ! timeout 30 "$2" advise --no-measure -n 1 "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"; then
		echo "advise failed or hung ($3):"
		cat "$tmp/err"
		fail=1
	fi
}

# The cache after a measurement: a regular file with its date, rounds and
# spread, and plausible values; the header says so.
measured() {
	if [ ! -f "$cache" ] || [ -L "$cache" ]; then
		echo "$1: the cache is not a regular file after measuring"
		fail=1
		return
	fi
	python3 - "$cache" "$1" <<'PY' || fail=1
import json, sys
c = json.load(open(sys.argv[1]))
ok = c.get("version") == 3 and c.get("measured_at", 0) > 0 and c.get("rounds") == 5 \
    and 0 <= c.get("spread", -1) < 10
for cl in c["classes"]:
    ok = ok and cl["malloc_free_ns"] > 0 and cl["pool_ns"] > 0 and cl["first_touch_ns"] >= 0 \
        and cl["pool_ns"] <= cl["pool_shared_ns"] <= 1e4
if not ok:
    print(sys.argv[2] + ": bad cache:", json.dumps(c)[:400])
    sys.exit(1)
PY
	if ! grep -qE '^Costs: measured [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}, spread \+-[0-9]+(\.[0-9])?% \(median of 5 rounds' "$tmp/out"; then
		echo "$1: no 'Costs: measured' header:"
		head -5 "$tmp/out"
		fail=1
	fi
}

# One line on stderr that names the cache and why, then the measurement.
said() {
	if [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -qF "$cache: $2" "$tmp/err"; then
		echo "$1: want one line '$cache: $2...', got:"
		cat "$tmp/err"
		fail=1
	fi
}

# A FIFO: advise must not open it for reading (it would wait for a
# writer) nor write through it.
mkfifo "$cache"
advise "$2" "$2" fifo
said fifo "not a regular file: measuring allocation costs again"
if [ -p "$cache" ]; then
	echo "fifo: still a FIFO at the cache path"
	exit 1
fi
measured fifo

# The cache from that run is used as it is: nothing said, nothing measured.
before=$(cat "$cache")
advise "$2" "$2" "cached"
if [ -s "$tmp/err" ] || [ "$before" != "$(cat "$cache")" ]; then
	echo "a good cache was not used as it is:"
	cat "$tmp/err"
	fail=1
fi
measured cached

# Implausible values: a negative pool cost (and a huge malloc cost).
cat >"$cache" <<'JSON'
{ "version": 2, "measured_at": 1700000000, "rounds": 5, "spread": 0.02,
  "classes": [ { "size": 16, "malloc_free_ns": 12, "pool_ns": -5e9, "first_touch_ns": 0 },
               { "size": 64, "malloc_free_ns": 1e12, "pool_ns": 18, "first_touch_ns": 0 } ] }
JSON
advise "$2" "$2" implausible
said implausible "class 0 (size 16): implausible cost: pool_ns"
measured implausible
if grep -q "would cost ~[0-9.]*s more" "$tmp/out"; then
	echo "implausible: seconds of pool cost:"
	cat "$tmp/out"
	fail=1
fi

# A table of before (version 1, no date): measured again.
cat >"$cache" <<'JSON'
{ "version": 1, "classes": [ { "size": 16, "malloc_free_ns": 12, "pool_ns": 18, "first_touch_ns": 0 } ] }
JSON
advise "$2" "$2" "version 1"
said "version 1" "measured by an older allocprof"
measured "version 1"

# A table of version 2 (dated, without the deque's cost): measured again.
cat >"$cache" <<'JSON'
{ "version": 2, "measured_at": 1700000000, "rounds": 5, "spread": 0.02,
  "classes": [ { "size": 16, "malloc_free_ns": 12, "pool_ns": 18, "first_touch_ns": 0 } ] }
JSON
advise "$2" "$2" "version 2"
said "version 2" "measured by an older allocprof, without the cost of a hit through the pool's shared deque"
measured "version 2"

# A symbolic link at the cache path is not followed.
echo '{}' >"$tmp/elsewhere.json"
rm -f "$cache"
ln -s "$tmp/elsewhere.json" "$cache"
advise "$2" "$2" "symlink"
said symlink "a symbolic link, not a regular file"
measured symlink
if [ "$(cat "$tmp/elsewhere.json")" != "{}" ]; then
	echo "symlink: written through"
	fail=1
fi

# A fixed table made from costs.json by a sed script is refused, with one
# line on stderr matching a pattern: bad_fixed WHAT SED PATTERN.
bad_fixed() {
	sed "$2" "$(dirname "$0")/costs.json" >"$tmp/fixed.json"
	if ALLOCPROF_TEST_COSTS="$tmp/fixed.json" "$3" advise "$tmp/t.trace" >"$tmp/out" 2>"$tmp/err"; then
		echo "a fixed table with $1 was used"
		fail=1
	elif [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q "^allocprof: .*fixed.json: $4" "$tmp/err"; then
		echo "fixed table with $1: want one line, got:"
		cat "$tmp/err"
		fail=1
	fi
}
bad_fixed "a negative pool cost" 's/"pool_ns": 18, "first_touch_ns": 0 },/"pool_ns": -1, "first_touch_ns": 0 },/' \
	"$2" "class 0 (size 16): implausible cost: pool_ns"
bad_fixed "the deque's cost in one class only" '0,/"pool_ns": 18,/s//"pool_ns": 18, "pool_shared_ns": 40,/' \
	"$2" 'class 1: "pool_shared_ns" in some classes and not in others'
bad_fixed "a deque hit cheaper than a private one" 's/"pool_ns": 18,/"pool_ns": 18, "pool_shared_ns": 10,/' \
	"$2" 'class 0 (size 16): implausible cost: pool_shared_ns'

# And a plausible fixed table says what it is.
ALLOCPROF_TEST_COSTS="$(dirname "$0")/costs.json" "$2" advise --no-measure -n 1 "$tmp/t.trace" >"$tmp/out"
grep -qxF "Costs: a fixed table (ALLOCPROF_TEST_COSTS), of unknown date and spread" "$tmp/out" || {
	echo "fixed table: no header line"
	fail=1
}
exit $fail
