#!/bin/sh
# `allocprof tui` on a real terminal when a replay made while the screen is
# up finds a corrupt chunk: the TUI says so on its status line (and goes
# on), and once quit, the terminal is itself again (endwin: echo and
# canonical input back), the error is one line on stderr and the exit
# status is 1. Before, the pass called exit() from the replay's thread,
# curses still on screen.
#
# Every pass over a trace decodes the same bytes, and the first one (before
# the screen) would find a corrupt chunk there: what a later pass can meet
# is a file overwritten in place meanwhile. A change the reader sees (its
# checksum) only makes the views short and warns; this one keeps the
# checksum: a byte inside the zstd frame of a counted EVENTS chunk (whose
# events the first pass takes from its counts, without decompressing them)
# overwritten, and four bytes after it chosen so that the chunk's CRC32C is
# the one the reader saw. The timeline of a new width (a resize) is then
# replayed from it.
# Skipped (exit 77) when tmux is not installed.
# usage: corrupt.sh ALLOCPROF MKTRACE TRACE_MKTRACE
. "$(dirname "$0")/tmux-setup.sh"
ap=$(realpath "$ap")
tmktrace=$(realpath "$3")
# the fixture as `record` leaves a trace: compacted, counted chunks
cp "$tmp/fx.trace" "$tmp/c.trace"
"$tmktrace" compact "$tmp/c.trace" || exit 1
# c.trace with the byte at 40 of its first counted EVENTS payload (in the
# zstd frame's blocks) made 0xff, its checksum kept: bad.trace
python3 - "$tmp/c.trace" "$tmp/bad.trace" <<'EOF' || exit 1
import sys


def crc32c(b):
    crc = 0xFFFFFFFF
    for x in b:
        crc ^= x
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


d = bytearray(open(sys.argv[1], "rb").read())
o = 16  # the preamble; chunks: 32-byte header (type at 4, flags at 5,
# payload length at 12, payload CRC32C at 16), then the payload
while d[o + 4] != 3 or not d[o + 5] & 64:  # EVENTS, COUNTS
    o += 32 + int.from_bytes(d[o + 12 : o + 16], "little")
p, n = o + 32, int.from_bytes(d[o + 12 : o + 16], "little")
want = int.from_bytes(d[o + 16 : o + 20], "little")
d[p + 40] = 0xFF
w = p + n - 4  # the last four bytes make the checksum what it was


def crc_with(x):
    d[w : w + 4] = x.to_bytes(4, "little")
    return crc32c(d[p : p + n])


# CRC32C is affine in the window's bits: solve for them over GF(2)
base = crc_with(0)
basis = {}
for i in range(32):
    v, m = crc_with(1 << i) ^ base, 1 << i
    for bit in reversed(range(32)):
        if v >> bit & 1:
            if bit not in basis:
                basis[bit] = (v, m)
                break
            v, m = v ^ basis[bit][0], m ^ basis[bit][1]
t, x = want ^ base, 0
for bit in reversed(range(32)):
    if t >> bit & 1:
        t, x = t ^ basis[bit][0], x ^ basis[bit][1]
if t or crc_with(x) != want:
    sys.exit("no window restores the checksum")
open(sys.argv[2], "wb").write(d)
EOF
# what the pass says of it (the first pass of its own, on a copy named the
# same): the line the TUI must show
mkdir "$tmp/copy"
cp "$tmp/bad.trace" "$tmp/copy/c.trace"
want=$(cd "$tmp/copy" && "$ap" stats c.trace 2>&1 >/dev/null)
case $want in
"allocprof: c.trace: corrupt chunk at byte "*": does not decompress") ;;
*)
	echo "FAIL setup: the damaged trace reads: '$want'"
	exit 1
	;;
esac
line=${want#allocprof: }

tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s t -x 100 -y 30 \
	"cd '$tmp' && env LC_ALL=C ALLOCPROF_NO_PROGRESS=1 ALLOCPROF_TEST_COSTS='${ALLOCPROF_TEST_COSTS:-}' \
	'$ap' tui --no-measure c.trace 2>err; echo \$? >rc; stty -a >stty" || exit 1

# expect_screen NAME BATCH_KEYS: polls the pane (up to ~20 s; no timing is
# asserted) until it equals the batch screen of the undamaged trace.
expect_screen() {
	(cd "$tmp" && "$ap" tui --batch --no-measure --keys "$2" c.trace) >"$tmp/want" || {
		echo "FAIL $1: tui --batch failed"
		exit 1
	}
	i=0
	while [ $i -lt 200 ]; do
		tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
		cmp -s "$tmp/got" "$tmp/want" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "FAIL $1: the terminal shows something else than tui --batch --keys '$2':"
	diff -u "$tmp/want" "$tmp/got"
	exit 1
}
keys() {
	tmux -L "$sock" send-keys -t t "$@"
}

# the worker's replays (the timeline's, the advisor's) done on the good
# file: both views shown
expect_screen "start" ""
keys a
expect_screen "advise" "a"
keys q T
expect_screen "timeline" "aqT"

# the file overwritten in place; a new width replays it
python3 -c 'import sys; open(sys.argv[1], "r+b").write(open(sys.argv[2], "rb").read())' \
	"$tmp/c.trace" "$tmp/bad.trace"
tmux -L "$sock" resize-window -t t -x 90 -y 30
i=0
while [ $i -lt 200 ]; do
	tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
	[ "$(tail -n 1 "$tmp/got")" = "$(printf '%.90s' "$line")" ] && break
	sleep 0.1
	i=$((i + 1))
done
if [ $i = 200 ]; then
	echo "FAIL status line: not the error '$line':"
	cat "$tmp/got"
	fail=1
fi
# the width made before stays; the error stays on the status line after
# a key
keys j
sleep 0.3
tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' >"$tmp/got"
[ "$(tail -n 1 "$tmp/got")" = "$(printf '%.90s' "$line")" ] ||
	{ echo "FAIL status line after a key: $(tail -n 1 "$tmp/got")"; fail=1; }
grep -q "Timeline" "$tmp/got" || grep -q "timeline" "$tmp/got" ||
	{ echo "FAIL the timeline is gone:"; cat "$tmp/got"; fail=1; }

keys q q
wait_for "$tmp/stty"
rc=$(cat "$tmp/rc" 2>/dev/null)
[ "$rc" = 1 ] || { echo "FAIL exit status '$rc', expected 1"; fail=1; }
printf '%s\n' "$want" | diff -u - "$tmp/err" || { echo "FAIL stderr"; fail=1; }
# endwin gave the terminal back: echo and canonical input on again
for mode in echo icanon; do
	grep -Eq "(^| )$mode( |$)" "$tmp/stty" ||
		{ echo "FAIL terminal not restored: $mode off"; cat "$tmp/stty"; fail=1; }
done
[ $fail = 0 ] && echo "ok: the error on the status line, then on stderr, exit 1, terminal restored"
exit $fail
