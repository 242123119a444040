#!/bin/bash
# bench/ab.sh: interleaved A/B timing of a few command lines, for numbers
# the full bench/run.sh does not give (record's fixed cost, one workload
# measured many times). Runs every command once per round, in turn, with
# sync before each, and prints the min and median wall time of each.
#
# Usage: bench/ab.sh ROUNDS LABEL 'COMMAND' [LABEL 'COMMAND' ...]
# Example (record's fixed cost):
#   bench/ab.sh 30 native /bin/true rec 'build/cli/allocprof record -q -o /tmp/t.trace /bin/true'
set -u
[ $# -ge 3 ] && [ $(($# % 2)) = 1 ] || { sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d' >&2; exit 2; }
rounds=$1
shift
case $rounds in '' | *[!0-9]* | 0) echo "ab: ROUNDS wants a positive number" >&2; exit 2 ;; esac
labels=() cmds=()
while [ $# -gt 0 ]; do labels+=("$1"); cmds+=("$2"); shift 2; done
declare -A t
for ((r = 1; r <= rounds; r++)); do
	for i in "${!cmds[@]}"; do
		sync
		s=$EPOCHREALTIME
		eval "${cmds[$i]}" >/dev/null 2>&1
		e=$EPOCHREALTIME
		t[$i]+="$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.4f", b - a }') "
	done
done
for i in "${!cmds[@]}"; do
	printf '%-12s ' "${labels[$i]}"
	echo "${t[$i]}" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
		END { printf "min %.4f s  median %.4f s\n", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
done
