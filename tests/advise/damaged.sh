#!/bin/sh
# The report side on traces whose header or modules are not what a sane
# run leaves (issue 9, brief 9c): a CPU count of 2^32 is one error line,
# not an assertion; a rate of 2^62 and --gc=interval:1ns finish in bounded
# memory; a module whose path is now a FIFO does not hang top or advise.
# usage: damaged.sh ALLOCPROF MKTRACE   (ALLOCPROF_TEST_COSTS set; SANITIZED
# set in an ASan build, where address-space limits do not apply)
set -u
A=$(readlink -f "$1")
M=$(readlink -f "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}
# limited RUN...: at most 60 s, and outside ASan 1 GiB of address space
limited() {
	if [ -z "${SANITIZED:-}" ]; then
		(ulimit -v 1048576 && timeout 60 "$@")
	else
		timeout 60 "$@"
	fi
}

"$M" damaged-cpus cpus.trace
limited "$A" advise cpus.trace >out 2>err
rc=$?
[ $rc = 1 ] || bad "cpus 2^32: exit status $rc: $(cat err)"
[ "$(cat err)" = "allocprof: cpus.trace: corrupt chunk at byte 16: the header's CPU count 4294967296 is more than 65536" ] ||
	bad "cpus 2^32: $(cat err)"

"$M" damaged-rate rate.trace
limited "$A" advise rate.trace >out 2>err
rc=$?
[ $rc = 0 ] || bad "rate 2^62: exit status $rc: $(tail -1 err)"
grep -q "^1\. " out || bad "rate 2^62: no site advised: $(head -5 out)"

# exact: 1.5 s long; 1.5e9 cycles of 1 ns
"$M" exact exact.trace
limited "$A" advise --gc=interval:1ns exact.trace >out 2>err
rc=$?
[ $rc = 0 ] || bad "interval 1ns: exit status $rc: $(tail -1 err)"
grep -q "^Cycles: every 1ns, 1499999999 in the trace" out || bad "interval 1ns: $(head -3 out)"

mkfifo fifo
"$M" damaged-module fifo.trace "$tmp/fifo"
for cmd in top advise; do
	limited "$A" $cmd fifo.trace >out 2>err
	rc=$?
	[ $rc = 0 ] || bad "module is a FIFO: $cmd: exit status $rc (124: it hung)"
	grep -q "fifo: not a regular file (any more); its frames are shown as addresses" err ||
		bad "module is a FIFO: $cmd: $(cat err)"
done
exit $fail
