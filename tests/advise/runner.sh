#!/bin/sh
# allocprof-replay refuses what is not a replay script of its version, or a
# damaged one, with one line and exit status 1, before it replays anything
# (and --free-list without a site to serve, --graph without a root or
# with members that are not sites, --round-up without classes).
# Its fault probe prices a page fault.
# usage: runner.sh ALLOCPROF_REPLAY
set -u
r=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# expect WHAT REGEX FILE ARGS...: stderr one line matching REGEX, rc 1, no stdout
expect() {
	what=$1 re=$2 file=$3
	shift 3
	"$r" "$@" 3<"$file" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc != 1 ] || [ -s "$tmp/out" ] || [ "$(wc -l <"$tmp/err")" != 1 ] ||
		! grep -Eq "^allocprof-replay: $re" "$tmp/err"; then
		echo "FAIL $what: rc $rc, stdout '$(cat "$tmp/out")', stderr:"
		cat "$tmp/err"
		fail=1
	fi
}
: >"$tmp/empty"
printf 'hello, this is not a script at all, but long enough\n' >"$tmp/text"
# magic and this version (3), one thread, five ops announced, none there
printf 'APREPLY1\003\000\000\000\001\000\000\000\000\000\000\000\000\000\000\000\005\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/short"
# a newer version (4)
printf 'APREPLY1\004\000\000\000\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$tmp/vnext"
expect usage "usage: " "$tmp/empty"
expect "bad descriptor" "bad descriptor 'x'" "$tmp/empty" x -1 0
expect "bad site" "bad site 'y'" "$tmp/empty" 3 y 0
expect "bad classes" "bad classes '5,3'" "$tmp/empty" 3 0 0 5,3
# a site and its other kinds: "S,K,..."
expect "kinds, trailing comma" "bad site '0,'" "$tmp/empty" 3 0, 0
expect "kinds, not a number" "bad site '0,x'" "$tmp/empty" 3 0,x 0
expect "graph root of kinds" "--graph's root is one site" "$tmp/empty" --graph 1 3 0,2 0
expect "free list of no site" "--free-list wants a site" "$tmp/empty" --free-list 3 -1 0
expect "free list, usage" "usage: " "$tmp/empty" --free-list 3 0
expect "bad graph members" "bad --graph 'x'" "$tmp/empty" --graph x 3 0 0
expect "graph of its own root" "bad --graph '1,0'" "$tmp/empty" --graph 1,0 3 0 0
expect "graph of no site" "--graph wants a site" "$tmp/empty" --graph 1 3 -1 0
expect "graph with classes" "--graph wants a site" "$tmp/empty" --graph 1 3 0 0 64,128
expect "graph and free list" "--graph wants a site" "$tmp/empty" --free-list --graph 1 3 0 0
expect "round up, no classes" "--round-up wants a site and its classes" "$tmp/empty" --round-up 3 0 0
expect "round up, no site" "--round-up wants a site and its classes" "$tmp/empty" --round-up 3 -1 0 64,128
expect "closed descriptor" "script: Bad file descriptor" "$tmp/empty" 9 -1 0
expect "empty file" "script: not a replay script" "$tmp/empty" 3 -1 0
expect "text" "not a replay script" "$tmp/text" 3 -1 0
expect "ops missing" "not a replay script, or a damaged one|damaged replay script" "$tmp/short" 3 -1 0
expect "version" "not a replay script" "$tmp/vnext" 3 -1 0
# a site to write whole that is not one
ALLOCPROF_REPLAY_WHOLE=x
export ALLOCPROF_REPLAY_WHOLE
expect "bad whole site" "bad ALLOCPROF_REPLAY_WHOLE 'x'" "$tmp/text" 3 -1 0
ALLOCPROF_REPLAY_WHOLE=0,
expect "bad whole kinds" "bad ALLOCPROF_REPLAY_WHOLE '0,'" "$tmp/text" 3 -1 0
unset ALLOCPROF_REPLAY_WHOLE
# the fault probe: 256 pages written and given back 32 times, priced
out=$("$r" --fault-probe) || { echo "FAIL fault probe: rc $?"; fail=1; }
case $out in
fault_ns=[1-9]*" faults="*" cpu_ns="[1-9]*) ;;
*) echo "FAIL fault probe: '$out'"; fail=1 ;;
esac
f=$(printf '%s\n' "$out" | sed -n 's/.* faults=\([0-9]*\) .*/\1/p')
[ "${f:-0}" -ge 8192 ] || { echo "FAIL fault probe: $f faults, want 8192 or more"; fail=1; }
exit $fail
