#!/bin/sh
# Checks a built allocprof .deb: it holds exactly allocprof, allocprof-report,
# allocprof-replay, liballocprof.so and liballocprof-try.so where the launcher looks for them (the directory
# compiled into the binaries), one man page per command, the bash
# completion, the pool header advise means (<allocprof/vpool.h>), and the
# Debian docs; it depends on libunwind8 (dlopened by
# the sampler); and, unpacked in a scratch root, its allocprof records
# PROGRAM (--all) from another directory and its top shows the call sites.
# usage: tools/check-deb.sh DEB PROGRAM EXPECTED_SITE
set -u
deb=$1 site=$3
prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
	echo "FAIL $*"
	fail=1
}

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' | grep -v '/$' | sort >"$tmp/files" ||
	{ echo "FAIL dpkg-deb -c $deb"; exit 1; }
dpkg-deb -x "$deb" "$tmp/root" || { echo "FAIL dpkg-deb -x $deb"; exit 1; }

# Where the binaries look for allocprof-report and liballocprof.so: the
# pkglibdir string compiled into them (cli/main.c, cli/cmd-record.c).
pkglibdir=$(grep -ao '/usr/lib/[a-z0-9_-]*/allocprof' "$tmp/root/usr/bin/allocprof" | sort -u)
[ "$(echo "$pkglibdir" | wc -l)" = 1 ] && [ -n "$pkglibdir" ] ||
	bad "usr/bin/allocprof: no single pkglibdir compiled in ('$pkglibdir')"

{
	echo /usr/bin/allocprof
	echo "$pkglibdir/allocprof-report"
	echo "$pkglibdir/allocprof-replay"
	echo "$pkglibdir/liballocprof.so"
	echo "$pkglibdir/liballocprof-try.so"
	echo /usr/share/bash-completion/completions/allocprof
	echo /usr/include/allocprof/vpool.h
	for m in "$src"/man/*.1.in; do
		echo "/usr/share/man/man1/$(basename "$m" .in).gz"
	done
	echo /usr/share/doc/allocprof/changelog.gz
	echo /usr/share/doc/allocprof/copyright
} | sort >"$tmp/want"
diff -u "$tmp/want" "$tmp/files" >"$tmp/diff" || {
	bad "the package's files differ from the expected ones:"
	cat "$tmp/diff"
}
# every command of the table has its page in the package
for c in $("$tmp/root/usr/bin/allocprof" --help 2>/dev/null |
		sed -n '/^commands:/,/^$/{s/^  \([a-z][a-z]*\) .*/\1/p}'); do
	grep -qx "/usr/share/man/man1/allocprof-$c.1.gz" "$tmp/files" ||
		bad "no man page for '$c' in the package"
done
dpkg-deb -f "$deb" Depends | grep -q 'libunwind8' ||
	bad "Depends: lacks libunwind8: $(dpkg-deb -f "$deb" Depends)"

# The unpacked binaries, run from another directory. They are not at their
# installed paths here, so the environment points them at the unpacked
# files; the paths they use once installed are checked above.
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
ap="$tmp/root/usr/bin/allocprof"
export ALLOCPROF_REPORT="$tmp/root$pkglibdir/allocprof-report"
export ALLOCPROF_PRELOAD="$tmp/root$pkglibdir/liballocprof.so"
export ALLOCPROF_NO_PROGRESS=1 LC_ALL=C
"$ap" record -q --all -o run.trace "$prog" >/dev/null 2>"$tmp/rec.err" ||
	bad "record $prog: exit $?: $(cat "$tmp/rec.err")"
"$ap" top --alloc_objects run.trace >"$tmp/top" 2>"$tmp/top.err" ||
	bad "top: exit $?: $(cat "$tmp/top.err")"
grep -Eq " $site\$" "$tmp/top" || {
	bad "top of the recorded run has no '$site' row:"
	cat "$tmp/top"
}
# advise finds its replay runner next to allocprof-report
"$ap" advise run.trace >"$tmp/adv" 2>"$tmp/adv.err" || bad "advise: exit $?: $(cat "$tmp/adv.err")"
grep -q 'allocprof-replay' "$tmp/adv" "$tmp/adv.err" && {
	bad "advise could not run its replay:"
	cat "$tmp/adv" "$tmp/adv.err"
}
[ $fail = 0 ] && echo "ok: $(basename "$deb"): $(wc -l <"$tmp/files") files as expected; record and top work"
exit $fail
