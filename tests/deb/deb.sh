#!/bin/sh
# The Debian package: built by dpkg-buildpackage from the tracked files
# (tools/build-deb.sh, about 20 s here), then its contents and an
# unpacked record + top checked (tools/check-deb.sh). Needs debhelper and
# dpkg-dev, which make check installs.
# usage: deb.sh SINGLE   (testdata/single, whose make_node() allocates)
set -u
# (each looked up by name: tests/deps checks that make check installs them)
need() {
	[ -n "$1" ] || { echo "FAIL $2 not found (make check installs it)"; exit 1; }
}
need "$(command -v dpkg-buildpackage)" dpkg-buildpackage
need "$(command -v dh)" dh
need "$(command -v git)" git
tools=$(cd "$(dirname "$0")/../../tools" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
deb=$(sh "$tools/build-deb.sh" "$tmp/deb") || exit 1
sh "$tools/check-deb.sh" "$deb" "$1" make_node
