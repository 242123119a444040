# tests/lib.sh: what the shell tests share (sourced, bash): `set -u`,
# LC_ALL=C, a scratch directory $work (removed at exit; the caller cds
# into it or not), failed=0, and:
#   fail MSG            prints "FAIL: MSG", the test fails (exit $failed)
#   expect_eq WHAT GOT WANT
#   skip WHY            the test cannot run here (meson's exit status 77)
#   jget FILE KEY       one top-level value of a JSON file (a number or
#                       string as it is; objects, lists, true/false/null as
#                       JSON)
#   jlen FILE KEY       the length of a top-level array
#   jq FILE EXPR        a Python expression over the JSON in `j`
#   ratio A B LOW HIGH  whether A/B is within [LOW, HIGH]
#   need_valgrind       sets VALGRIND (as given, else the one in PATH), or
#                       skips the test when there is none
# The C tests' counterpart is tests/ap_check.h.
set -u
export LC_ALL=C
work=$(mktemp -d "${TMPDIR:-/tmp}/allocprof-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
# the interpreter meson runs on (E2E_PYTHON), not a version manager's
# wrapper in PATH
_lib_py=${E2E_PYTHON:-/usr/bin/python3}

fail() {
	echo "FAIL: $*"
	failed=1
}

expect_eq() { # what got want
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

skip() {
	echo "SKIP: $*"
	exit 77
}

jget() {
	"$_lib_py" -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1" "$2"
}

jlen() {
	"$_lib_py" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"
}

jq() {
	"$_lib_py" -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

ratio() {
	"$_lib_py" -c 'import sys; a, b, lo, hi = map(float, sys.argv[1:]); sys.exit(0 if b > 0 and lo <= a / b <= hi else 1)' "$@"
}

need_valgrind() {
	VALGRIND=${VALGRIND:-$(command -v valgrind || true)}
	[ -n "$VALGRIND" ] || skip "valgrind not found"
}
