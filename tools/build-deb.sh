#!/bin/sh
# Builds the Debian package (debian/) with dpkg-buildpackage -b from a copy
# of the source files, those a clean clone has (git's, with edits not yet
# committed, ignored files such as build directories left out), and prints
# the path of the .deb. Needs debhelper and dpkg-dev (make deb installs them).
# usage: tools/build-deb.sh OUTDIR
set -eu
out=$1
src=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$out"
mkdir -p "$out/allocprof"
out=$(cd "$out" && pwd)
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$out/allocprof"
# a make above (make check, make deb) must not hand its jobserver down
unset MAKEFLAGS MFLAGS MAKELEVEL
(cd "$out/allocprof" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed; the log is $out/build.log" >&2
	exit 1
}
ls "$out"/allocprof_*_amd64.deb
