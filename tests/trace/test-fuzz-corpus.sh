#!/bin/sh
# The fuzz target's entry point, through its plain driver (no clang
# needed), over the seed corpus and the inputs kept in fuzz-corpus/ (past
# findings): each must read, compact and read back the same, or abort.
# usage: test-fuzz-corpus.sh FUZZ_DRIVER MKTRACE KEPT_DIR
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$(dirname "$0")/fuzz-seeds.sh" "$1" "$2" "$tmp/seeds"
n=$(ls "$tmp/seeds" | wc -l)
[ "$n" -eq 15 ] || { echo "expected 15 seeds, got $n"; exit 1; }
"$1" "$tmp/seeds" "$3"
