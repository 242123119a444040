# Sourced by the tests that run `allocprof tui` on a real terminal (tmux.sh,
# nocolor.sh), with their arguments ALLOCPROF MKTRACE: exits 77 (skipped)
# without tmux (make check installs it); else sets ap, mktrace, $tmp (the
# fixture trace in $tmp/fx.trace, removed at exit), $sock (a private tmux
# server, killed at exit), $tmp/tmux.conf (no status line, TERM=screen: 8
# colours; panes stay after their program exits), fail=0 and wait_for.
set -u
ap=$1 mktrace=$2
if ! command -v tmux >/dev/null; then
	echo "SKIP: tmux is not installed"
	exit 77
fi
tmp=$(mktemp -d)
sock="allocprof-tui-test-$$"
cleanup() {
	tmux -L "$sock" kill-server 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
"$mktrace" "$tmp/fx.trace" || exit 1
fail=0

cat >"$tmp/tmux.conf" <<EOF2
set -g status off
set -g default-terminal screen
set -g remain-on-exit on
EOF2

# wait_for FILE: polls (up to ~20 s, for a slow machine; no timing is
# asserted) until FILE is there and not empty
wait_for() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}
