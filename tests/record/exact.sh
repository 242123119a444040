#!/usr/bin/env bash
# Exact where it is easy to be exact (issue 24): a sampled trace's peak is
# the sampler's live-byte count (exact to within the slack END states, in
# glibc's usable sizes), held against the program's own sums and an --all
# trace of it. One argument picks the group. Environment (from meson):
# ALLOCPROF, EXACT_PEAK (tests/record/exact_peak.c).
group=$1
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# num NAME LINE: NAME=value from the program's summary line
num() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$2"; }

# within WHAT GOT WANT TOLERANCE
within() {
	awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { d = g - w; exit !(d <= t && -d <= t) }' ||
		fail "$1: got $2, want $3 ± $4"
}

# What glibc and the sampler allocate besides the program's blocks
# (thread start-up, the loader): an --all trace of `small` holds 5.7 kB.
NOISE=12288

case $group in
peak | small)
	line=$("$EXACT_PEAK" $group) || fail "$group failed"
	req=$(num requested_peak "$line") use=$(num usable_peak "$line")
	blocks=$(num blocks_at_peak "$line")
	[ -n "$req" ] && [ -n "$use" ] || { fail "no sums from the program: $line"; exit 1; }
	"$ALLOCPROF" record -q -o s.trace "$EXACT_PEAK" $group >/dev/null || fail "record"
	"$ALLOCPROF" record -q --all -o a.trace "$EXACT_PEAK" $group >/dev/null || fail "record --all"
	"$ALLOCPROF" stats --json s.trace >s.json 2>s.err || fail "stats: $(cat s.err)"
	"$ALLOCPROF" stats --json a.trace >a.json 2>a.err || fail "stats --all: $(cat a.err)"
	expect_eq "sampled peak kind" "$(jget s.json peak_inuse_space_kind)" counted
	expect_eq "--all peak kind" "$(jget a.json peak_inuse_space_kind)" exact
	slack=$(jget s.json peak_inuse_space_within)
	expect_eq "slack (one thread at a time, 16 KiB each)" "$slack" \
		$([ $group = peak ] && echo 32768 || echo 16384)
	# the sampled trace's peak is the program's usable peak, to within the
	# slack (and what the C library allocates on its own)
	within "sampled peak vs the program's usable peak" "$(jget s.json peak_inuse_space)" \
		"$use" $((slack + NOISE))
	# --all: the events' exact peak is of requested bytes; its counter's
	# is of usable bytes, at most 40 more a block live at the peak
	within "--all peak vs the program's requested peak" "$(jget a.json peak_inuse_space)" \
		"$req" $NOISE
	within "--all counter vs the program's usable peak" "$(jget a.json peak_usable_space)" \
		"$use" $((slack + NOISE))
	[ $((use - req)) -le $((40 * blocks + 3 * 4096)) ] ||
		fail "usable peak $use is more than 40 bytes a block (and a page a mapped one) above $req"
	# the estimate it replaces is far off for the small one (516 kB for 4 kB)
	if [ $group = small ]; then
		[ "$(jget s.json peak_inuse_space)" -lt 40000 ] ||
			fail "peak of a 4 kB program: $(jget s.json peak_inuse_space)"
		"$ALLOCPROF" stats s.trace >s.txt || fail "stats text"
		grep -q "^peak_inuse_space .*(exact to within 16kB: every block counted by the sampler at glibc's usable size" s.txt ||
			fail "stats does not say what its peak is: $(grep peak s.txt)"
	fi
	;;
*)
	echo "exact.sh: no group $group" >&2
	exit 2
	;;
esac
exit $failed
