#!/bin/bash
# The bash completion (completion/allocprof.bash), in two ways:
#  1. its function called as bash calls it (COMP_LINE, COMP_POINT,
#     COMP_WORDS split at blanks and at '=' as readline does): commands,
#     every option of a command's --help, option values, trace files;
#  2. readline itself, in an interactive bash under tmux: Tab after
#     `allocprof sta` and after `allocprof advise --gc=in` must complete
#     the line (readline's own word splitting, compopt nospace).
# usage: complete.sh ALLOCPROF COMPLETION_FILE
set -u
ap=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
comp=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d)
sock="allocprof-complete-test-$$"
cleanup() {
	command -v tmux >/dev/null && tmux -L "$sock" kill-server 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
bad() {
	echo "FAIL $*"
	fail=1
}

# A directory of candidates: two traces, one other file, one directory.
mkdir "$tmp/d" "$tmp/dir"
touch "$tmp/d/app.trace" "$tmp/d/allocprof.demo.42.trace.43" "$tmp/d/notes.txt"
mkdir "$tmp/d/runs"
cd "$tmp/d" || exit 1

# comp LINE: the completions of LINE (cursor at its end), sorted, on one
# line; duplicates (a command in two directories of PATH) shown once, as
# bash does.
comp() {
	bash --norc --noprofile -c '
		. "$1" || exit 1
		COMP_LINE=$2
		COMP_POINT=${#2}
		# readline splits at blanks and keeps = and : as words of their own
		w=$(printf "%s" "$2" | sed "s/=/ = /g")
		read -r -a COMP_WORDS <<<"$w"
		[[ $2 == *[[:space:]] ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		_allocprof 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"' sh "$comp" "$1" | sort -u | tr '\n' ' ' | sed 's/ $//'
}

# expect NAME GOT WANT
expect() {
	[ "$2" = "$3" ] || bad "$1: completions '$2', expected '$3'"
}

# 0. Loaded, it completes allocprof with its function.
got=$(bash --norc --noprofile -c '. "$1" && complete -p allocprof' sh "$comp")
expect "complete -p" "$got" "complete -F _allocprof allocprof"

# 1. Commands: those of `allocprof --help` (read here with sed), and help.
cmds=$("$ap" --help | sed -n '/^commands:/,/^$/{s/^  \([a-z][a-z]*\) .*/\1/p}')
for c in record top list stats advise calibrate export tui; do
	case " $(echo $cmds) " in *" $c "*) ;; *) bad "allocprof --help has no '$c'" ;; esac
done
expect "commands" "$(comp "$ap ")" "$(printf '%s\n' $cmds help | sort | tr '\n' ' ' | sed 's/ $//')"
expect "command prefix" "$(comp "$ap st")" "stats"
expect "help CMD" "$(comp "$ap help t")" "timeline top tree try tui"

# 2. Options: every option in a command's --help, nothing else.
for c in $cmds; do
	want=$("$ap" "$c" --help | sed -n '/^options:/,/^$/p' | grep '^ *-' |
		sed 's/^ *//; s/  .*//' | grep -o -- '-[-a-z_]*[=:a-z_]*' |
		sed 's/\(=[a-z_]*:\).*/\1/' | sort | tr '\n' ' ' | sed 's/ $//')
	[ -n "$want" ] || bad "$c --help: no options read"
	expect "$c -" "$(comp "$ap $c -")" "$want"
done
expect "top --alloc_o" "$(comp "$ap top --alloc_o")" "--alloc_objects"

# 3. Option values: by the value's name in --help.
expect "export --format" "$(comp "$ap export --format ")" "folded json pprof"
expect "export --sample-index" "$(comp "$ap export --sample-index inuse")" "inuse_objects inuse_space"
# after '=' readline's word is empty: the values alone (not "=gogc:",
# which made the line --gc==gogc:)
expect "advise --gc=" "$(comp "$ap advise --gc=")" "gogc: interval:"
expect "advise --gc=i" "$(comp "$ap advise --gc=i")" "interval:"
expect "timeline --format" "$(comp "$ap timeline --format ")" "csv json svg text"
expect "timeline --format=" "$(comp "$ap timeline --format=")" "csv json svg text"
expect "timeline --format=s" "$(comp "$ap timeline --format=s")" "svg"
expect "export --format=" "$(comp "$ap export --format=")" "folded json pprof"
expect "timeline --time-unit" "$(comp "$ap timeline --time-unit ")" "B s"
expect "timeline --time-unit=" "$(comp "$ap timeline --time-unit=")" "B s"
expect "timeline --time-unit=B" "$(comp "$ap timeline --time-unit=B")" "B"
expect "html --time-unit=" "$(comp "$ap html --time-unit=")" "B s"
expect "html --time-unit" "$(comp "$ap html --time-unit ")" "B s"
expect "top --sample_index" "$(comp "$ap top --sample_index ")" \
	"alloc_objects alloc_space inuse_objects inuse_space peak_objects peak_space temporary"
expect "top --sample_index peak" "$(comp "$ap top --sample_index peak")" "peak_objects peak_space"
expect "flamegraph --sample_index=t" "$(comp "$ap flamegraph --sample_index=t")" "temporary"
expect "top --peak" "$(comp "$ap top --peak")" "--peak_objects --peak_space"
expect "diff --fail-above pe" "$(comp "$ap diff --fail-above pe")" "peak= peak_objects= peak_space="
expect "diff --fail-above total.alloc_s" "$(comp "$ap diff --fail-above total.alloc_s")" "total.alloc_space="
expect "diff --fail-above=tem" "$(comp "$ap diff --fail-above=tem")" "temporary="
expect "top --nodecount=" "$(comp "$ap top --nodecount=")" ""
expect "advise --replay-cpus" "$(comp "$ap advise --replay-cpus ")" "all"
expect "try --replay-cpus a" "$(comp "$ap try --replay-cpus a")" "all"
expect "advise --replay-cpus=" "$(comp "$ap advise --replay-cpus=")" "all"
expect "top --debug-dir" "$(comp "$ap top --debug-dir ")" "runs"
expect "export -o" "$(comp "$ap export -o ")" "allocprof.demo.42.trace.43 app.trace notes.txt runs"
expect "top -n takes a value" "$(comp "$ap top -n ")" ""

# 4. Trace files (and directories) where TRACE goes.
traces="allocprof.demo.42.trace.43 app.trace runs"
expect "top TRACE" "$(comp "$ap top ")" "$traces"
expect "top --lines TRACE" "$(comp "$ap top --lines --focus parse ")" "$traces"
expect "stats TRACE" "$(comp "$ap stats a")" "allocprof.demo.42.trace.43 app.trace"
expect "html --diff-base BASE" "$(comp "$ap html --diff-base ")" "$traces"
expect "html TRACE" "$(comp "$ap html --diff-base app.trace a")" "allocprof.demo.42.trace.43 app.trace"
expect "list REGEX" "$(comp "$ap list ")" ""
expect "list REGEX TRACE" "$(comp "$ap list parse ")" "$traces"

# 5. record: the program is a command or a file; its arguments are its own.
expect "record PROGRAM" "$(comp "$ap record --all -o x.trace ls")" \
	"$(compgen -c -- ls | sort -u | tr '\n' ' ' | sed 's/ $//')"
expect "record PROGRAM ARGS" "$(comp "$ap record ls --al")" ""
# record -p PID: this shell is among the processes offered
case " $(comp "$ap record -p $$") " in
*" $$ "*) ;;
*) bad "record -p PID: $$ not offered" ;;
esac
# try TRACE -- PROGRAM: the same, after the --.
expect "try -- PROGRAM" "$(comp "$ap try x.trace -- ls")" \
	"$(compgen -c -- ls | sort -u | tr '\n' ' ' | sed 's/ $//')"
expect "try -- PROGRAM ARGS" "$(comp "$ap try x.trace -- ls --al")" ""

# 6. readline, under tmux.
if ! command -v tmux >/dev/null; then
	bad "tmux is not installed (make check installs it)"
	exit 1
fi
printf 'set -g status off\n' >"$tmp/tmux.conf"
cat >"$tmp/rc" <<EOF
PS1='$ '
PATH=$(dirname "$ap"):\$PATH
. '$comp'
EOF
tmux -L "$sock" -f "$tmp/tmux.conf" new-session -d -s t -x 120 -y 10 -c "$tmp/d" \
	"env -i HOME='$tmp' TERM=screen PATH='$PATH' bash --noprofile --rcfile '$tmp/rc' -i" || exit 1
# line TEXT: waits (up to ~20 s; no timing asserted) until the last prompt
# line of the pane is TEXT.
line() {
	i=0
	while [ $i -lt 200 ]; do
		got=$(tmux -L "$sock" capture-pane -p -t t | sed 's/ *$//' | grep '^\$' | tail -n 1)
		[ "$got" = "$(echo "\$ $1" | sed 's/ *$//')" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	bad "readline: the line shows '$got', expected '\$ $1'"
}
line ""
tmux -L "$sock" send-keys -t t "$(basename "$ap") sta" Tab
line "$(basename "$ap") stats"
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") advise --gc=in" Tab
line "$(basename "$ap") advise --gc=interval:"
tmux -L "$sock" send-keys -t t 500ms
line "$(basename "$ap") advise --gc=interval:500ms"
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") top ap" Tab
line "$(basename "$ap") top app.trace"
# Tab right after '=': no second '=' (the line stays as it is: two values)
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") advise --gc=" Tab
sleep 0.5
line "$(basename "$ap") advise --gc="
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") timeline --format=s" Tab
line "$(basename "$ap") timeline --format=svg"
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") top --sample_index=tem" Tab
line "$(basename "$ap") top --sample_index=temporary"
tmux -L "$sock" send-keys -t t C-u "$(basename "$ap") diff --fail-above total.te" Tab
line "$(basename "$ap") diff --fail-above total.temporary="

[ $fail = 0 ] && echo "ok: commands, options of $(echo $cmds | wc -w) commands, values, trace files; readline completes"
exit $fail
