#!/bin/bash
# bench/attach.sh: what a sampler attached with `record -p` costs the
# program, against the same sampler preloaded by `record` and against no
# sampler: bench/attach_loop.c (malloc(64)/free pairs, timed by the
# program itself from the moment it is told to go, so that neither the
# attach nor record's finishing is in it), 20 M pairs at the default rate
# and 2 M with --all (attached, every event is unwound: no stack cache);
# the modes interleaved, ROUNDS rounds, min and median ns a pair.
# Also the time record -p takes to attach and to detach (the process is
# stopped for part of it), over the same rounds.
# Then how long the attach and the detach keep the program's threads from
# their own code, as they see it: bench/attach_pause.c (two threads that
# wake every 100 us and keep their longest lateness; record -p calls into
# the first, the second only sees the stops), attached with --all and
# detached ROUNDS times, each ticker's longest lateness in each phase (idle
# before, the attach, attached, the detach; the idle and attached windows
# 20 ms, about as long as the others): medians over the rounds.
# Usage: bench/attach.sh [-n ROUNDS] [-P] [BUILD_DIR]  (-P: the pauses only)
# Environment: CC (default cc), BENCH_OUT (default bench/out).
set -u
rounds=5
pauses_only=
while getopts "n:Ph" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	P) pauses_only=1 ;;
	*) sed -n '2,/^set -u/p' "$0" | sed -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "attach: no build directory '${1:-build}'" >&2; exit 1; }
ap=$build/cli/allocprof
out=${BENCH_OUT:-$here/out}
mkdir -p "$out" || exit 1
"${CC:-cc}" -O2 -g -o "$out/attach_loop" "$here/attach_loop.c" ||
	{ echo "attach: cannot build bench/attach_loop.c" >&2; exit 1; }
"${CC:-cc}" -O2 -g -pthread -o "$out/attach_pause" "$here/attach_pause.c" ||
	{ echo "attach: cannot build bench/attach_pause.c" >&2; exit 1; }
loop=$out/attach_loop
declare -A res

ms() { date +%s%N; }

# one run of mode $1 (native, preload, attach) with record options $2...:
# prints the program's ns a pair (attach: and the attach and detach ms)
one() {
	local mode=$1 n=$2
	shift 2
	local fifo=$out/attach.fifo
	rm -f "$fifo" && mkfifo "$fifo"
	case $mode in
	native) "$loop" $n <"$fifo" >"$out/attach.out" & ;;
	preload) "$ap" record -q -o /dev/null "$@" "$loop" $n <"$fifo" >"$out/attach.out" & ;;
	attach) "$loop" $n <"$fifo" >"$out/attach.out" & ;;
	esac
	local pid=$! rec=
	exec 9>"$fifo"
	if [[ $mode == attach ]]; then
		# the shell's child opens the FIFO, then execs the loop: attach to
		# the loop, not to the shell before its exec
		until [[ $(readlink /proc/$pid/exe) == "$loop" ]]; do sleep 0.001; done
		local t0
		t0=$(ms)
		rm -f "$out/attach.err"
		"$ap" record -p $pid -o /dev/null "$@" 2>"$out/attach.err" &
		rec=$!
		until grep -q "attached" "$out/attach.err"; do
			kill -0 $rec 2>/dev/null || { cat "$out/attach.err" >&2; break; }
			sleep 0.001
		done
		echo "attach_ms $(( ($(ms) - t0) / 1000000 ))" >>"$out/attach.times"
	fi
	echo go >&9
	exec 9>&-
	wait $pid
	[[ -n $rec ]] && wait $rec
	awk '/ns_per_pair/ {print $2}' "$out/attach.out"
}

stat() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {printf "min %.2f median %.2f (n=%d)", a[1], a[int((NR+1)/2)], NR}'; }

# the pauses: one round prints "<phase> <first ticker's us> <second's us>",
# and what record says it held stopped ("held-<attach|detach> <every
# thread's longest us> <every thread's us in all> <the calls' thread's
# us in all>", ALLOCPROF_TEST_STOPTIME)
pause_round() {
	local line rec
	coproc PAUSE { "$out/attach_pause" 2; }
	mark() { echo mark >&"${PAUSE[1]}" && read -r line <&"${PAUSE[0]}" && echo "$1 ${line#late_us }"; }
	# windows about as long as the attach's and the detach's (10-20 ms), so
	# that the machine's own noise weighs on each phase alike
	sleep 0.3
	mark warmup >/dev/null
	sleep 0.02
	mark idle
	: >"$out/pause.err"
	ALLOCPROF_TEST_STOPTIME=1 "$ap" record -p "$PAUSE_PID" --all -o /dev/null 2>"$out/pause.err" &
	rec=$!
	until grep -q "attached" "$out/pause.err"; do
		kill -0 $rec 2>/dev/null || { cat "$out/pause.err" >&2; break; }
		sleep 0.001
	done
	mark attach
	sleep 0.02
	mark attached
	kill -INT $rec
	wait $rec
	mark detach
	echo quit >&"${PAUSE[1]}"
	wait "$PAUSE_PID" 2>/dev/null
	sed -n 's/^allocprof: \([a-z]*\) stopped: every thread [0-9]* times, \([0-9]*\) us, longest \([0-9]*\) us; the calls.* thread [0-9]* times, \([0-9]*\) us.*/held-\1 \3 \2 \4/p' "$out/pause.err"
}
declare -A late
for r in $(seq "$rounds"); do
	while read -r phase a b c; do
		late[$phase.called]+="$a "
		late[$phase.other]+="$b "
		late[$phase.third]+="$c "
	done < <(pause_round)
done
for phase in idle attach attached detach; do
	printf "%-9s late us: called thread %s; other thread %s\n" "$phase" \
		"$(stat <<<"${late[$phase.called]}")" "$(stat <<<"${late[$phase.other]}")"
done
for phase in attach detach; do
	printf "%-9s held stopped, us: every thread, longest %s; in all %s; the calls' thread in all %s\n" \
		"$phase" "$(stat <<<"${late[held-$phase.called]}")" "$(stat <<<"${late[held-$phase.other]}")" \
		"$(stat <<<"${late[held-$phase.third]}")"
done
[[ -n $pauses_only ]] && exit 0

rm -f "$out/attach.times"
for r in $(seq "$rounds"); do
	for rate in default all; do
		opt=()
		[[ $rate == all ]] && opt=(--all)
		for mode in native preload attach; do
			[[ $mode == native && $rate == all ]] && continue
			n=20000000
			[[ $rate == all ]] && n=2000000
			res[$mode.$rate]+="$(one $mode $n "${opt[@]}") "
		done
	done
done
for k in native.default preload.default attach.default preload.all attach.all; do
	printf "%-16s ns/pair %s\n" "$k" "$(stat <<<"${res[$k]}")"
done
printf "%-16s ms %s\n" "attach" "$(awk '{print $2}' "$out/attach.times" | tr '\n' ' ' | stat)"
