#!/bin/sh
# pool/vpool.h compiles as C++ (C++17 and later) with -Wall -Wextra -Werror,
# with g++ and with clang++ when there is one, and the program works.
# usage: vpool-cxx.sh SRCDIR (the source tree)
set -eu
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ran=0
for cxx in g++ clang++; do
	command -v "$cxx" >/dev/null 2>&1 || continue
	for std in c++17 c++20; do
		"$cxx" -std=$std -O2 -Wall -Wextra -Wpedantic -Werror -pthread \
			-I "$src/pool" -o "$tmp/vpool-cxx" "$src/tests/pool/vpool-cxx.cpp"
		printf '%s -std=%s: ' "$cxx" "$std"
		"$tmp/vpool-cxx"
		ran=$((ran + 1))
	done
done
# And as C11 with strict flags, from a C file of its own.
if command -v gcc >/dev/null 2>&1; then
	printf '#include "vpool.h"\nint main(void){struct vpool p;if(vpool_init(&p,0,0,0))return 1;\nint x;vpool_put(&p,&x);int r=vpool_get(&p)!=&x;vpool_destroy(&p);return r;}\n' >"$tmp/c.c"
	gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -pthread -I "$src/pool" -o "$tmp/c" "$tmp/c.c"
	"$tmp/c"
	echo "gcc -std=c11: ok"
fi
[ "$ran" -ge 2 ] || { echo "no C++ compiler ran"; exit 1; }
