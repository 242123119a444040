#!/bin/bash
# A frame in code that only an untyped symbol names (an assembly label
# without .type: label.c's asm_label_entry, after crtstuff's unsized
# frame_dummy; ld.so's _dl_start_user under every library constructor's
# allocation) is named by it, as eu-addr2line and binutils' addr2line
# name it, not by the unsized function below it nor as module+0xoffset.
# usage: labels.sh ALLOCPROF LABEL_PROGRAM
. "$(dirname "$0")/../lib.sh"
ap=$1 prog=$2
"$ap" record -q --all -o "$work/l.trace" "$prog" >/dev/null 2>"$work/err" ||
	{ fail "record: $(cat "$work/err")"; exit 1; }
stacks=$("$ap" export --format=folded -o - "$work/l.trace" 2>"$work/err")
expect_eq "the stack of label_alloc" "$(grep 'label_alloc' <<<"$stacks")" \
	"_start;__libc_start_main_impl;__libc_start_call_main;main;asm_label_entry;label_alloc 300"
# the references say so too
addr=$(nm "$prog" | awk '$3 == "asm_label_entry" { print $1 }')
for tool in addr2line eu-addr2line; do
	command -v $tool >/dev/null || continue
	expect_eq "$tool -f at asm_label_entry+8" \
		"$($tool -f -e "$prog" "$(printf '0x%x' $((0x$addr + 8)))" | head -1)" asm_label_entry
done
exit $failed
