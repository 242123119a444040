#!/bin/bash
# advise measures a site only where the model's generous expectation
# reaches a ten-thousandth of the recorded run's CPU time and 20us
# (report/advise_measure.c, MEASURE_FLOOR, MEASURE_FLOOR_NS): a program
# that computes for most of a second and reuses a 100-byte block three
# times has a site with hits, which is not measured, and the header says
# why; so has the same program without its computing (its expectation,
# ~225ns, was over a ten-thousandth of its ~1ms, and it was measured).
# Environment (tests/e2e/meson.build): ALLOCPROF.
. "$(dirname "$0")/../lib.sh"
cc=${CC:-cc}
command -v "$cc" >/dev/null || skip "no C compiler ($cc)"
cat >"$work/floor.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static char *few(size_t n) { char *p = malloc(n); if (p) p[0] = 1; return p; }
int main(void)
{
	volatile double x = 0;
	for (long i = 0; i < 50000000; i++)
		x += (double)i * 0.5;
	for (int k = 0; k < 4; k++) {
		char *p = few(100);
		free(p);
	}
	printf("%d\n", x > 0);
	return 0;
}
C
"$cc" -O2 -g -o "$work/floor" "$work/floor.c" || { fail "cannot build"; exit 1; }
"$ALLOCPROF" record --all -q -o "$work/f.trace" -- "$work/floor" >/dev/null 2>&1 || { fail "record failed"; exit 1; }
"$ALLOCPROF" advise -n 0 "$work/f.trace" >"$work/out" 2>&1 || { fail "advise failed: $(cat "$work/out")"; exit 1; }
grep -q "^Not measured: 1 site where a pool would reuse objects, none that the model expects to save a ten-thousandth of the run and 20us$" "$work/out" ||
	fail "the floor is not said: $(head -5 "$work/out")"
grep -q "^few floor.c" "$work/out" || grep -q "few floor.c" "$work/out" || fail "no site at few: $(cat "$work/out")"
grep -q "^   measured:" "$work/out" && fail "a site was measured: $(cat "$work/out")"
# its four requests come within one of the trace's time steps: said so,
# not "requests every 0ns" (a preemption between them, on a loaded
# machine, can put them in two steps: then a spacing that is not 0)
gets=$(grep "gets 4: hits 3, misses 1, hit rate 75.0%; requests " "$work/out")
case $gets in
*"requests all at one time of the trace's") ;;
*"requests every 0ns"*) fail "the spacing of requests at one time: $gets" ;;
*"requests every "[0-9]*) ;;
*) fail "the spacing of requests at one time: $gets" ;;
esac
echo "measure-floor: $(grep '^Not measured' "$work/out")"
# the same without its computing: a run of ~1ms
sed 's/i < 50000000/i < 1/' "$work/floor.c" >"$work/short.c"
"$cc" -O2 -g -o "$work/short" "$work/short.c" || { fail "cannot build short"; exit 1; }
"$ALLOCPROF" record --all -q -o "$work/s.trace" -- "$work/short" >/dev/null 2>&1 || { fail "record short failed"; exit 1; }
"$ALLOCPROF" advise -n 0 "$work/s.trace" >"$work/sout" 2>&1 || { fail "advise short failed: $(cat "$work/sout")"; exit 1; }
grep -q "^Not measured: 1 site where a pool would reuse objects, none that the model expects to save a ten-thousandth of the run and 20us$" "$work/sout" ||
	fail "short: the floor is not said: $(head -5 "$work/sout")"
grep -q "^   measured:" "$work/sout" && fail "short: a site was measured: $(cat "$work/sout")"
exit $failed
