#!/bin/bash
# bench/sizes.sh: the size of allocprof's trace against heaptrack's file of
# the same workload, both recording every allocation (record --all;
# heaptrack -o, which compresses with zstd). Workloads: python3 building
# and parsing JSON (PYTHONMALLOC=malloc, so that every object is a malloc),
# python3 threads handing objects to each other (with and without it),
# bench/alloc_heavy.py with and without it, cppcheck and git on allocprof's
# own sources, clang++, testdata/handoff (threads passing blocks), and the
# bench's mixed and loop64. A workload whose program is not installed is
# skipped. Prints events, both sizes, their ratio and record's wall time and
# peak RSS (the program's included). Not a test: nothing is asserted.
#
# Usage: bench/sizes.sh [BUILD]        (default: build; JSON_ITEMS=N to
#        add python3 JSON with N items, e.g. 1150000 for ~59 M events;
#        VS=OTHER_BUILD to add the size of OTHER_BUILD's trace of another
#        run of each workload, and BUILD's over it: a format change's
#        growth)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
ap=$build/cli/allocprof
[ -x "$ap" ] || { echo "bench/sizes: no $ap (build first)" >&2; exit 1; }
command -v heaptrack >/dev/null || { echo "bench/sizes: heaptrack is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the bench's loops, built as bench/run.sh builds them
for p in loop64 mixed; do
	${CC:-cc} -O2 -g -Wall -o "$tmp/$p" "$here/$p.c" -lpthread || exit 1
done

size() { stat -c %s "$1"; }
run() {
	name=$1
	shift
	command -v "$1" >/dev/null || { printf '%-12s skipped (%s not installed)\n' "$name" "$1"; return; }
	rm -f "$tmp"/t.trace* "$tmp"/ht.*
	if ! (cd "$tmp" && /usr/bin/time -f "%e %M" -o "$tmp/rtime" "$ap" record -q --all \
		-o "$tmp/t.trace" "$@" >/dev/null 2>&1 </dev/null); then
		# (a program's own failure is fine: the trace says how it ended)
		[ -s "$tmp/t.trace" ] || { printf '%-12s record failed\n' "$name"; return; }
	fi
	(cd "$tmp" && heaptrack -o "$tmp/ht" "$@" >/dev/null 2>&1 </dev/null)
	vs=
	if [ -n "${VS:-}" ]; then
		rm -f "$tmp"/v.trace*
		(cd "$tmp" && "$VS/cli/allocprof" record -q --all -o "$tmp/v.trace" "$@" \
			>/dev/null 2>&1 </dev/null)
		vs=$(size "$tmp/v.trace" 2>/dev/null || echo 0)
	fi
	ht=$(ls "$tmp"/ht.* 2>/dev/null | head -1)
	ev=$("$ap" stats --json "$tmp/t.trace" 2>/dev/null |
		/usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
	read -r wall rss <"$tmp/rtime"
	a=$(size "$tmp/t.trace")
	h=$([ -n "$ht" ] && size "$ht" || echo 0)
	awk -v n="$name" -v e="$ev" -v a="$a" -v h="$h" -v w="$wall" -v r="$rss" -v vs="$vs" 'BEGIN {
		printf "%-12s %11d %11d %11d %7s %8.2f s %7.0f MiB", n, e, a, h,
		       (h > 0 ? sprintf("%.2f", a / h) : "n/a"), w, r / 1024
		if (vs != "")
			printf " %11d %7s", vs, (vs > 0 ? sprintf("%.3f", a / vs) : "n/a")
		printf "\n" }'
}

printf '%-12s %11s %11s %11s %7s %10s %11s' workload events allocprof heaptrack ratio record "record RSS"
[ -n "${VS:-}" ] && printf ' %11s %7s' VS-size "vs VS"
printf '\n'
json='import json, sys
d = [{"k%d" % i: [i, str(i)]} for i in range(int(sys.argv[1]))]
e = json.loads(json.dumps(d))'
PYTHONMALLOC=malloc run json160k /usr/bin/python3 -c "$json" 160000
[ -n "${JSON_ITEMS:-}" ] && PYTHONMALLOC=malloc run json$JSON_ITEMS /usr/bin/python3 -c "$json" "$JSON_ITEMS"
# two producer threads hand lists of dicts to two consumers through a queue
threads='import json, queue, threading
q = queue.Queue()
def prod(n):
    for i in range(n):
        q.put([{"k%d" % j: str(j)} for j in range(i % 50)])
    q.put(None)
def cons():
    while True:
        x = q.get()
        if x is None:
            break
        json.loads(json.dumps(x))
ts = [threading.Thread(target=prod, args=(20000,)), threading.Thread(target=cons),
      threading.Thread(target=prod, args=(20000,)), threading.Thread(target=cons)]
[t.start() for t in ts]
[t.join() for t in ts]'
# (from a file: heaptrack's launcher loses this -c argument)
printf '%s\n' "$threads" >"$tmp/threads.py"
run pythreads /usr/bin/python3 "$tmp/threads.py"
PYTHONMALLOC=malloc run pythreads-m /usr/bin/python3 "$tmp/threads.py"
PYTHONMALLOC=malloc run pymalloc10k /usr/bin/python3 "$here/alloc_heavy.py" 10000
run pyheavy200k /usr/bin/python3 "$here/alloc_heavy.py" 200000
run cppcheck cppcheck -q "$root/sampler" "$root/trace"
run gitlog git -C "$root" log -p -n 3000
run clang clang++ -O1 -c "$root/testdata/handoff.cpp" -o "$tmp/h.o"
[ -x "$build/testdata/handoff" ] && run handoff "$build/testdata/handoff"
run mixed "$tmp/mixed" 2000000
run loop64 "$tmp/loop64" 2000000
