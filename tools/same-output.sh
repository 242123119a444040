#!/bin/bash
# tools/same-output.sh OLD_BUILD NEW_BUILD [DIR]: the trace codec, old and
# new, side by side on the same traces. Not a test (it needs two builds);
# run it after a change to trace/ or to the sampler's encoding, with
# OLD_BUILD a build of the commit before the change.
#
# 1. Traces: OLD_BUILD's `record` runs testdata programs (--all and
#    sampled, raw: ALLOCPROF_COMPACT_LEVEL=0), and the mktrace tools of
#    both builds write their synthetic traces. Each build compacts the raw
#    traces as `record` does (level 3, then `allocprof symbols`): the
#    same runs, so the reports can be compared byte for byte even when
#    the builds write different format versions (a raw trace of the old
#    version is the new one's but for its version field, byte 8, which is
#    set for the new build).
# 2. The test writer: both builds' tests/trace/mktrace traces must be the
#    same bytes, but for the format version (byte 8).
# 3. The compactor: every raw trace compacted by each build's
#    ap_trace_compact (a small driver linked to each libaptrace.a); the
#    outputs' bytes are compared too, but may differ where the compactor
#    encodes otherwise (set SAME_COMPACT=0 to count those apart).
# 4. The reports: stats, top (two indexes and granularities), list,
#    advise --no-measure (a measurement's times differ run to run),
#    timeline (text and csv), export (folded, json, pprof) of every trace, from both builds,
#    must be the same bytes (stdout, stderr and exit status); for the
#    compacted traces, the old build reads the old compactor's output and
#    the new build the new one's.
# With TWINS=1, bench/twins' plain programs are recorded too (--all only:
# their runs are long; built by bench/twins/run.sh --build-only).
# Prints one line per difference and a summary; exit 1 on any difference.
set -u
old=$(cd "${1:?usage: same-output.sh OLD_BUILD NEW_BUILD [DIR]}" && pwd)
new=$(cd "${2:?usage: same-output.sh OLD_BUILD NEW_BUILD [DIR]}" && pwd)
dir=${3:-$(mktemp -d "${TMPDIR:-/tmp}/same-output.XXXXXX")}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir/traces" "$dir/out"
export LC_ALL=C NO_COLOR=1 ALLOCPROF_TEST_COSTS="$src/tests/advise/costs.json"
fails=0 checks=0 recoded=0
differ() { echo "DIFFERENT: $*"; fails=$((fails + 1)); }

# 1. traces recorded by the old build
progs="single threads handoff realloc_chain aligned dlopen_main bigalloc peak temporary demo cxx
	inline views diffsite lifecycle advise_win advise_grow advise_bloat advise_tiny
	advise_buffer advise_escape advise_rare ownthreads"
# (gaps only with --gaps since e9f5a32: an old build without it records
# them with every --all trace)
gaps=
"$old/cli/allocprof" record --help 2>/dev/null | grep -q -- --gaps && gaps=--gaps
for p in $progs; do
	exe="$old/testdata/$p"
	# (a program newer than the old build: the new build's)
	[ -x "$exe" ] || exe="$new/testdata/$p"
	[ -x "$exe" ] || { echo "skip $p: no $exe"; continue; }
	(cd "$dir/traces" &&
		ALLOCPROF_COMPACT_LEVEL=0 "$old/cli/allocprof" record -q -o "$p-rate.raw" \
			"$exe" >/dev/null 2>&1
		ALLOCPROF_COMPACT_LEVEL=0 "$old/cli/allocprof" record -q --all \
			-o "$p-all.raw" "$exe" >/dev/null 2>&1
		[ -z "$gaps" ] || ALLOCPROF_COMPACT_LEVEL=0 "$old/cli/allocprof" record -q --all \
			$gaps -o "$p-gaps.raw" "$exe" >/dev/null 2>&1) || true
done
if [ "${TWINS:-0}" = 1 ]; then
	"$src/bench/twins/run.sh" --build-only -k "$dir/twins" >/dev/null 2>&1 ||
		differ "cannot build bench/twins' programs"
	for exe in "$dir"/twins/*; do
		p=$(basename "$exe")
		case $p in *.twin | *.o | runstat | *.*) continue ;; esac
		[ -x "$exe" ] || continue
		(cd "$dir/traces" && ALLOCPROF_COMPACT_LEVEL=0 "$old/cli/allocprof" record -q --all \
			-o "twin-$p-all.raw" "$exe" >/dev/null 2>&1) || true
	done
fi
# setv FILE: FILE with the new build's format version (the old one's raw
# traces and test writer's traces are the new one's but for it)
setv() {
	printf "\\x$(printf %02x "$newv")" | dd of="$1" bs=1 seek=8 conv=notrunc status=none
}

# 2. the test writer: mktrace of both builds
for m in exact exact-noend exact-cut sampled "big 200000"; do
	set -- $m
	f="mk-$1"
	"$old/tests/trace/mktrace" "$1" "$dir/traces/$f.old" ${2:-} >/dev/null 2>&1
	"$new/tests/trace/mktrace" "$1" "$dir/traces/$f.new" ${2:-} >/dev/null 2>&1
	checks=$((checks + 1))
	# the version field aside
	cp "$dir/traces/$f.old" "$dir/traces/$f.v"
	dd if="$dir/traces/$f.new" of="$dir/traces/$f.v" bs=1 skip=8 seek=8 count=4 \
		conv=notrunc status=none
	cmp -s "$dir/traces/$f.v" "$dir/traces/$f.new" || differ "mktrace $1 writes other bytes"
	rm -f "$dir/traces/$f.v"
	mv "$dir/traces/$f.old" "$dir/traces/$f.trace"
	mv "$dir/traces/$f.new" "$dir/traces/$f.trace.new"
done
# tests/report/mktrace records its own code's addresses and build-id, which
# differ between two builds: its traces come from the old build only
newv=$(od -An -tu4 -j8 -N4 "$dir/traces/mk-exact.trace.new" | tr -d ' ')
for r in 1 65536; do
	"$old/tests/report/mktrace" "$dir/traces/rep-$r.trace" $r >/dev/null 2>&1
	cp "$dir/traces/rep-$r.trace" "$dir/traces/rep-$r.trace.new" &&
		setv "$dir/traces/rep-$r.trace.new"
done

# 3. the compactor of both builds on the raw traces
cat >"$dir/compact.c" <<'EOF'
#include <stdio.h>
#include "ap_trace_compact.h"
int main(int argc, char **argv)
{
	struct ap_compact_stats st;
	struct ap_error err;
	if (argc != 3 || ap_trace_compact(argv[1], atoi(argv[2]), &st, &err) < 0) {
		fprintf(stderr, "compact: %s\n", argc == 3 ? err.msg : "usage: compact FILE LEVEL");
		return 1;
	}
	return 0;
}
EOF
sed -i '1i #include <stdlib.h>' "$dir/compact.c"
for b in old new; do
	bd=${!b}
	bsrc=$src
	[ $b = old ] && bsrc=$(cd "$bd/.." && pwd)
	cc -O1 -D_GNU_SOURCE -I"$bsrc/trace" -I"$bsrc/util" "$dir/compact.c" \
		"$bd/trace/libaptrace.a" "$bd/util/libaputil.a" -lzstd -lm -o "$dir/compact-$b" ||
		{ differ "cannot build the $b compactor driver"; }
done
for raw in "$dir"/traces/*.raw; do
	[ -e "$raw" ] || continue
	cp "$raw" "$raw.new" && setv "$raw.new"
	for lv in 3 10; do
		for b in old new; do
			in=$raw
			[ $b = new ] && in=$raw.new
			cp "$in" "$dir/c.$b" && "$dir/compact-$b" "$dir/c.$b" $lv >/dev/null 2>&1 ||
				differ "the $b compactor fails on $(basename "$raw")"
			# record's own: level 3, then the symbols kept
			if [ $lv = 3 ]; then
				cp "$dir/c.$b" "$dir/s.$b"
				"${!b}/cli/allocprof" symbols "$dir/s.$b" >/dev/null 2>&1
			fi
		done
		if [ $lv = 3 ]; then
			mv "$dir/s.old" "${raw%.raw}.trace"
			mv "$dir/s.new" "${raw%.raw}.trace.new"
		fi
		if [ "${SAME_COMPACT:-1}" = 1 ]; then
			checks=$((checks + 1))
			cmp -s "$dir/c.old" "$dir/c.new" || differ "compact level $lv of $(basename "$raw")"
		elif ! cmp -s "$dir/c.old" "$dir/c.new"; then
			recoded=$((recoded + 1))
		fi
	done
	cp "$dir/c.old" "${raw%.raw}-recompacted.trace"
	cp "$dir/c.new" "${raw%.raw}-recompacted.trace.new"
done
rm -f "$dir"/c.old "$dir"/c.new

# 4. the reports: the old build in traces/, the new one in tnew/ (the same
# names; a compacted trace there is the new compactor's)
mkdir -p "$dir/tnew"
for t in "$dir"/traces/*; do
	n=$(basename "$t")
	case $n in *.new) continue ;; esac
	if [ -e "$t.new" ]; then mv "$t.new" "$dir/tnew/$n"; else ln -sf "../traces/$n" "$dir/tnew/$n"; fi
done
run() { # BUILD NAME ARGS...: stdout, stderr and status to out/NAME.BUILD
	local b=$1 name=$2 sub=traces
	shift 2
	[ $b = new ] && sub=tnew
	local bd=${!b}
	(cd "$dir/$sub" && "$bd/cli/allocprof" "$@" >"../out/$name.$b.out" 2>"../out/$name.$b.err"
		echo "exit $?" >>"../out/$name.$b.err")
}
for t in "$dir"/traces/*.trace "$dir"/traces/*.raw; do
	[ -e "$t" ] || continue
	n=$(basename "$t")
	while IFS='|' read -r label args; do
		# bench/twins' traces: advise's model only (they are long)
		case $n:$label in twin-*:advise*) ;; twin-*) continue ;; esac
		for b in old new; do
			# shellcheck disable=SC2086
			run $b "$n.$label" $args "$n"
		done
		checks=$((checks + 1))
		if ! cmp -s "$dir/out/$n.$label.old.out" "$dir/out/$n.$label.new.out" ||
			! cmp -s "$dir/out/$n.$label.old.err" "$dir/out/$n.$label.new.err"; then
			differ "allocprof $label on $n"
		fi
	done <<'EOF'
stats|stats
statsjson|stats --json
top|top
topobj|top --alloc_objects --lines -n 40
topinuse|top --inuse_space --files
topjson|top --json
list|list .
advise|advise --no-measure
advisejson|advise --no-measure --json
timeline|timeline
timelinecsv|timeline --format=csv
folded|export --format=folded
json|export --format=json
EOF
	case $n in twin-*) continue ;; esac
	for b in old new; do
		# one output name for both: the message names it
		sub=traces
		[ $b = new ] && sub=tnew
		(cd "$dir/$sub" && "${!b}/cli/allocprof" export --format=pprof -o "../out/p.pb" "$n" \
			>"../out/$n.pprof.$b.out" 2>&1; echo "exit $?" >>"../out/$n.pprof.$b.out"
			mv ../out/p.pb "../out/$n.pprof.$b.pb" 2>/dev/null)
	done
	checks=$((checks + 1))
	cmp -s "$dir/out/$n.pprof.old.pb" "$dir/out/$n.pprof.new.pb" &&
		cmp -s "$dir/out/$n.pprof.old.out" "$dir/out/$n.pprof.new.out" ||
		differ "allocprof export --format=pprof on $n"
done
ntr=$(ls "$dir"/traces | wc -l)
nerr=$(grep -L '^exit 0$' "$dir"/out/*.new.err "$dir"/out/*.pprof.new.out 2>/dev/null | wc -l)
echo "same-output: $ntr traces, $checks comparisons, $fails different," \
	"$recoded compactions encoded otherwise (SAME_COMPACT=0)," \
	"$nerr runs that exit non-zero in both (files in $dir)"
[ $fails = 0 ]
