#!/bin/bash
# bench/live.sh: what the reports need for a heap of many live blocks.
# bench/live.c holds N blocks (default 20 M) live at its peak; each build
# records it with --all (its own trace), then stats, top, list, advise
# --no-measure and timeline run on that trace under /usr/bin/time -v.
# Prints, per build and command (record's included: the program's RSS is
# in it), the wall time, the user time and the peak RSS. Not a test:
# nothing is asserted.
#
# Usage: bench/live.sh [-n N] BUILD [BUILD...]
#        (e.g. bench/live.sh main-build build: before and after)
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/timev.sh"
n=20000000
while getopts n:h o; do
	case $o in
	n) n=$OPTARG ;;
	*) sed -n '2,10p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -g -Wall -o "$tmp/live" "$here/live.c" || exit 1
printf '%-28s %-22s %8s %8s %10s\n' build command wall user 'RSS (KiB)'
for b in "$@"; do
	ap=$(cd "$b" && pwd)/cli/allocprof
	[ -x "$ap" ] || { echo "bench/live: no $ap" >&2; exit 1; }
	t=$tmp/live-$(basename "$b").trace
	(cd "$tmp" && /usr/bin/time -v -o "$tmp/tv" "$ap" record -q --all -o "$t" ./live "$n" \
		>/dev/null) || exit 1
	printf '%-28s %-22s %8s %8s %10s  (trace: %s bytes)\n' "$b" "record --all" \
		$(timev_fields "$tmp/tv") "$(stat -c %s "$t")"
	for c in stats top list advise timeline; do
		args=$c
		[ "$c" = advise ] && args="advise --no-measure"
		[ "$c" = list ] && args="list node"
		/usr/bin/time -v -o "$tmp/tv" "$ap" $args "$t" >/dev/null 2>"$tmp/err" ||
			{ echo "$b $args: failed: $(tail -1 "$tmp/err")"; continue; }
		printf '%-28s %-22s %8s %8s %10s\n' "$b" "$args" $(timev_fields "$tmp/tv")
	done
done
