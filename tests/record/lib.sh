# lib.sh: what the record tests share (sourced by output.sh, durable.sh,
# files.sh and tests/process/process.sh): a scratch directory to work in,
# removed at exit; fail, expect_eq, skip, jget and jlen. The caller sets
# `group`, and exits with $failed.
set -u
export LC_ALL=C
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
failed=0

fail() {
	echo "FAIL: $*"
	failed=1
}

expect_eq() { # what got want
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

skip() { # why: the test cannot run here (meson's exit status 77)
	echo "SKIP: $*"
	exit 77
}

# jlen FILE KEY: the length of a top-level array of a JSON output.
jlen() {
	/usr/bin/python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))[sys.argv[2]]))' "$1" "$2"
}

# jget FILE KEY: one top-level value of a stats --json output.
jget() {
	/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1" "$2"
}
