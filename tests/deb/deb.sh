#!/bin/sh
# The Debian package: built by dpkg-buildpackage from the tracked files
# (tools/build-deb.sh, about 20 s here), then its contents and an
# unpacked record + top checked (tools/check-deb.sh). Needs debhelper and
# dpkg-dev, which make check installs.
# usage: deb.sh SINGLE   (testdata/single, whose make_node() allocates)
set -u
for t in dpkg-buildpackage dh git; do
	command -v $t >/dev/null || { echo "FAIL $t not found (make check installs debhelper, dpkg-dev)"; exit 1; }
done
tools=$(cd "$(dirname "$0")/../../tools" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deb=$(sh "$tools/build-deb.sh" "$tmp/deb") || exit 1
sh "$tools/check-deb.sh" "$deb" "$1" make_node
