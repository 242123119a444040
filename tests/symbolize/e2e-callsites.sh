#!/bin/sh
# End to end: record testdata/inline and testdata/cxx with `allocprof
# record --all`, then the call site of every allocation (symbolized from the
# trace alone) must be the SITE: line of the source with the count the
# program makes by construction (see the headers of inline.c and cxx.cpp).
# usage: e2e-callsites.sh ALLOCPROF CALLSITES INLINE CXX TESTDATA_DIR TMPDIR
set -eu
allocprof=$1 callsites=$2 inline=$3 cxx=$4 src=$5 tmp=$6/e2e-callsites
rm -rf "$tmp" && mkdir -p "$tmp"
export LC_ALL=C

line() { grep -n "SITE:$2\( \|\$\)" "$src/$1" | cut -d: -f1; }

"$allocprof" record --all -q -o "$tmp/inline.trace" "$inline" >/dev/null
"$callsites" "$tmp/inline.trace" >"$tmp/inline.out" 2>"$tmp/inline.err"
cat >"$tmp/inline.want" <<WANT
1000 make_node inline.c:$(line inline.c make_node)
500 copy_name inline.c:$(line inline.c copy_name)
1 build_labels inline.c:$(line inline.c build_labels)
1 zeroed inline.c:$(line inline.c zeroed)
WANT
diff -u "$tmp/inline.want" "$tmp/inline.out"
# a fresh build: no build-id warnings, no missing files
diff -u /dev/null "$tmp/inline.err"

"$allocprof" record --all -q -o "$tmp/cxx.trace" "$cxx" >/dev/null
"$callsites" "$tmp/cxx.trace" >"$tmp/cxx.all" 2>"$tmp/cxx.err"
# only the program's own sites: libstdc++ may allocate its exception
# emergency pool at startup, before main, depending on when the sampler
# starts recording
grep ' cxx\.cpp:' "$tmp/cxx.all" >"$tmp/cxx.out" || true
cat >"$tmp/cxx.want" <<WANT
100 geo::Point<double>* geo::detail::make_point<double>(double) cxx.cpp:$(line cxx.cpp make_point)
50 geo::Point<int>* geo::detail::make_point<int>(int) cxx.cpp:$(line cxx.cpp make_point)
20 names::make_label[abi:cxx11](int) cxx.cpp:$(line cxx.cpp make_label)
8 geo::Cloud<float>::add(float) cxx.cpp:$(line cxx.cpp cloud_add)
WANT
diff -u "$tmp/cxx.want" "$tmp/cxx.out"
diff -u /dev/null "$tmp/cxx.err"
echo "call sites of testdata/inline and testdata/cxx agree with their SITE: lines"
