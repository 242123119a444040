# lib.sh: what the record tests share (sourced by output.sh, durable.sh,
# files.sh, exact.sh and tests/process/process.sh): tests/lib.sh, and the
# scratch directory as the current one. The caller sets `group`, and
# exits with $failed.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
cd "$work" || exit 1
