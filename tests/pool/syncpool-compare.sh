#!/bin/sh
# Runs the same get/put/gc scripts through the pool model (pool-script) and
# through Go's sync.Pool (syncpool_ref.go, GOMAXPROCS=1) and compares what
# every Get returned. Exit 77 (skip) when `go` is missing.
# usage: syncpool-compare.sh POOL_SCRIPT SYNCPOOL_REF_GO
set -eu
script=$1
ref=$2
if ! command -v go >/dev/null 2>&1; then
	echo "go not found: skipping the comparison with sync.Pool"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GOCACHE="$tmp/gocache" HOME="$tmp" GOPATH="$tmp/gopath" GO111MODULE=off GOFLAGS=
"$script" fixed >"$tmp/scripts"
"$script" random 20240601 3000 >>"$tmp/scripts"
"$script" run <"$tmp/scripts" >"$tmp/model.out"
cp "$ref" "$tmp/ref.go"
(cd "$tmp" && go build -o ref ref.go)
GOMAXPROCS=1 "$tmp/ref" <"$tmp/scripts" >"$tmp/go.out"
gets=$(wc -l <"$tmp/go.out")
if [ "$gets" -lt 10000 ]; then
	echo "only $gets Gets from Go: the scripts did not run"
	exit 1
fi
if ! diff -u "$tmp/go.out" "$tmp/model.out" >"$tmp/diff"; then
	echo "the model and sync.Pool differ (- Go, + model):"
	head -40 "$tmp/diff"
	exit 1
fi
scripts=$(grep -c '^script' "$tmp/scripts")
hits=$(grep -vc ' miss$' "$tmp/go.out")
echo "model == sync.Pool on $scripts scripts, $gets Gets ($hits hits)"
