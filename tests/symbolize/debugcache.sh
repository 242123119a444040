#!/bin/sh
# The cache of separate debug files kept decompressed (symbolize/
# debugcache.c): `allocprof symbols` on a trace of a program whose C
# library's debug file has compressed DWARF (libc6-dbg's) keeps that file
# once in $XDG_CACHE_HOME/allocprof/debug, by build-id, its sections
# decompressed, and reads it from there next time; the symbols kept are
# the same bytes with the cache, without it (ALLOCPROF_DEBUG_CACHE=0,
# which writes nothing) and from it. A file there that is not what its
# name says (another build-id) is not read, and is replaced; one not used
# for 30 days goes when another is kept. Times are bench/'s, not
# asserted here. Skipped without such a debug file (libc6-dbg).
# usage: debugcache.sh ALLOCPROF PROGRAM
set -u
ap=$1 prog=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
py=/usr/bin/python3
[ -x "$py" ] || py=python3
export XDG_CACHE_HOME="$tmp/cache" ALLOCPROF_TEST_DEBUG_CACHE=1
cache="$tmp/cache/allocprof/debug"
"$ap" record -q --all --no-symbols -o "$tmp/base.trace" "$prog" >/dev/null 2>&1 ||
	{ echo "FAIL record"; exit 1; }

# symbols N [ENV...]: a copy of the trace as N.trace keeps its symbols
# (with ENV); what the cache did in $tmp/N.err
symbols() {
	n=$1
	shift
	cp "$tmp/base.trace" "$tmp/$n.trace"
	env "$@" "$ap" symbols "$tmp/$n.trace" 2>"$tmp/$n.err" ||
		{ echo "FAIL symbols $n: $(cat "$tmp/$n.err")"; fail=1; }
}
said() {
	grep -q "^allocprof: symbols: debug files: $2$" "$tmp/$1.err" ||
		{ echo "FAIL $1: wanted '$2': $(cat "$tmp/$1.err")"; fail=1; }
}

symbols off ALLOCPROF_DEBUG_CACHE=0
said off "0 from the cache, 0 kept in it"
[ -e "$cache" ] && { echo "FAIL ALLOCPROF_DEBUG_CACHE=0 made $cache"; fail=1; }
symbols first
if grep -q "0 from the cache, 0 kept in it" "$tmp/first.err"; then
	echo "SKIP: no separate debug file with compressed DWARF for $prog's modules (libc6-dbg)"
	exit 77
fi
said first "0 from the cache, 1 kept in it"
kept=$(find "$cache" -name '*.debug' -type f)
[ "$(echo "$kept" | wc -l)" = 1 ] || { echo "FAIL the cache holds: $kept"; exit 1; }
# named by its build-id, which it has; no compressed section
"$py" - "$kept" <<'EOF' || fail=1
import os, struct, sys
path = sys.argv[1]
d = open(path, "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum = struct.unpack_from("<HH", d, 0x3a)
bid = None
for i in range(shnum):
    o = shoff + i * shentsize
    typ, flags = struct.unpack_from("<IQ", d, o + 4)
    off, size = struct.unpack_from("<QQ", d, o + 0x18)
    if flags & 0x800:  # SHF_COMPRESSED
        sys.exit("FAIL section %d of %s is compressed" % (i, path))
    if typ == 7:  # SHT_NOTE
        p = off
        while p < off + size:
            nsz, dsz, nt = struct.unpack_from("<III", d, p)
            name = d[p + 12:p + 12 + nsz]
            desc = d[p + 12 + (nsz + 3) // 4 * 4:][:dsz]
            if nt == 3 and name == b"GNU\0":
                bid = desc.hex()
            p += 12 + (nsz + 3) // 4 * 4 + (dsz + 3) // 4 * 4
want = os.path.basename(os.path.dirname(path)) + os.path.basename(path)[:-len(".debug")]
if bid != want:
    sys.exit("FAIL %s has the build-id %s" % (path, bid))
EOF
symbols again
said again "1 from the cache, 0 kept in it"
for n in first again; do
	cmp -s "$tmp/off.trace" "$tmp/$n.trace" ||
		{ echo "FAIL the symbols kept $n are not those kept without the cache"; fail=1; }
done
# a file that is not what its name says is not read, and is replaced;
# a file unused for 30 days goes then
old="$cache/00/0123456789.debug"
mkdir -p "$cache/00" && cp "$kept" "$old" && touch -d '40 days ago' "$old"
cp "$prog" "$kept"
symbols replaced
said replaced "0 from the cache, 1 kept in it"
cmp -s "$tmp/off.trace" "$tmp/replaced.trace" ||
	{ echo "FAIL the symbols kept after a bad cache file"; fail=1; }
cmp -s "$prog" "$kept" && { echo "FAIL the bad cache file was kept"; fail=1; }
[ -e "$old" ] && { echo "FAIL a file unused for 40 days stayed"; fail=1; }
symbols last
said last "1 from the cache, 0 kept in it"
[ $fail = 0 ] && echo "ok: kept once, read after, the same symbols"
exit $fail
