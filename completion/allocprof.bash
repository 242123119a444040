# bash completion for allocprof(1): commands, options and trace files.
# Commands and options are read from `allocprof --help` and
# `allocprof CMD --help`, the same text the man pages are checked against,
# so a new option completes without a change here. Installed by meson as
# <datadir>/bash-completion/completions/allocprof.

# _allocprof_help CMD: the --help text of CMD ('' for the command list),
# from the allocprof being completed; cached for the shell's life.
_allocprof_help()
{
	local key=_allocprof_help_${1:-main} ap=${_allocprof_exe:-allocprof}
	key=${key//[^A-Za-z0-9_]/_}
	if [[ -z ${!key+set} ]]; then
		local text
		if [[ -n $1 ]]; then
			text=$("$ap" "$1" --help 2>/dev/null)
		else
			text=$("$ap" --help 2>/dev/null)
		fi
		printf -v "$key" '%s' "$text"
	fi
	printf '%s\n' "${!key}"
}

# _allocprof_commands: the command names of `allocprof --help`.
_allocprof_commands()
{
	_allocprof_help "" | awk '/^commands:/ { on = 1; next }
		on && /^  [a-z]/ { print $1; next } on { exit }'
}

# _allocprof_options CMD: one line per option of CMD's --help, "NAME ARG"
# (ARG empty for a flag; "=" when the value is part of NAME, as in
# --gc=gogc:). Only the first column of the "options:" section is read.
_allocprof_options()
{
	_allocprof_help "$1" | awk '
		/^options:/ { on = 1; next }
		on && /^$/ { exit }
		on && /^ +-/ {
			sub(/^ +/, "")
			col = $0
			sub(/  +.*/, "", col)	# the first column ends at 2+ spaces
			n = split(col, w, /,? +/)
			arg = ""
			if (n > 1 && w[n] !~ /^-/)
				arg = w[n--]
			for (i = 1; i <= n; i++) {
				if (w[i] ~ /=/) {
					sub(/[A-Z]+$/, "", w[i])	# --gc=gogc:N -> --gc=gogc:
					print w[i], "="
				} else {
					print w[i], arg
				}
			}
		}'
}

# _allocprof_values CMD OPT: the values `allocprof CMD --help` spells out
# for OPT in its usage line ("--format=pprof|folded|json").
_allocprof_values()
{
	_allocprof_help "$1" | head -n 1 | grep -o -- "$2=[a-z_|]*" |
		sed "s/^$2=//; s/|/ /g"
}

# The sample indexes (--sample_index NAME, and what --fail-above limits).
_allocprof_indexes="alloc_space alloc_objects inuse_space inuse_objects peak_space peak_objects temporary"

# _allocprof_arg_values CMD OPT ARG: the values of OPT, whose value --help
# names ARG (FMT, UNIT, NAME, LIMIT); empty when any word goes.
_allocprof_arg_values()
{
	case $3 in
	FMT)
		local v
		v=$(_allocprof_values "$1" "$2")
		# the formats --help describes in words rather than its usage line
		[[ -z $v && $1 == timeline ]] && v="text csv json svg"
		printf '%s\n' "$v" ;;
	UNIT) [[ $1 == timeline || $1 == html ]] && echo "s B" ;;
	PID)
		# record -p: the running processes (the user's own first: any
		# other needs root)
		local d
		for d in /proc/[0-9]*; do
			[[ -O $d ]] && echo "${d#/proc/}"
		done ;;
	NAME) [[ $2 == --sample[-_]index ]] && echo "$_allocprof_indexes" ;;
	LIMIT)
		# WHAT= of --fail-above WHAT=+CHANGE: an index, total.INDEX, peak
		local i
		for i in $_allocprof_indexes; do
			printf '%s= total.%s= ' "$i" "$i"
		done
		echo "peak=" ;;
	*'|'*)
		# N|all: the lowercase words are the values spelled out
		tr '|' ' ' <<<"${3//[A-Z]/}" ;;
	esac
}

_allocprof()
{
	# Words split at blanks only (COMP_WORDS also splits at = and :), up to
	# the cursor; bash's own current word is a suffix of ours.
	local line=${COMP_LINE:0:COMP_POINT} words cur
	read -r -a words <<<"$line"
	[[ $line == *[[:space:]] || ${#words[@]} -eq 0 ]] && words+=("")
	cur=${words[${#words[@]} - 1]}
	# readline replaces the text after the last word break (= and : are
	# breaks); bash's COMP_WORDS has the break itself as a word when the
	# cursor is right after it, so take the word from our own split.
	local rlcur=${cur##*[=:]}
	local pre=${cur%"$rlcur"}
	_allocprof_exe=${words[0]/#\~/$HOME}
	command -v -- "$_allocprof_exe" >/dev/null 2>&1 || _allocprof_exe=allocprof
	COMPREPLY=()

	local -a reply=()
	local i n=${#words[@]}
	if ((n == 2)); then
		if [[ $cur == -* ]]; then
			reply=($(compgen -W "-h --help --version" -- "$cur"))
		else
			reply=($(compgen -W "$(_allocprof_commands) help" -- "$cur"))
		fi
		COMPREPLY=("${reply[@]}")
		return
	fi
	local cmd=${words[1]}
	if [[ $cmd == help ]]; then
		((n == 3)) && COMPREPLY=($(compgen -W "$(_allocprof_commands)" -- "$cur"))
		return
	fi

	# Walk the words before the cursor: which take the next word as their
	# value, and how many positional arguments came before.
	local opts name arg pos=0 prevarg= ended=
	opts=$(_allocprof_options "$cmd")
	for ((i = 2; i < n - 1; i++)); do
		local w=${words[i]}
		if [[ -n $prevarg ]]; then
			prevarg=
		elif [[ -z $ended && $w == -- ]]; then
			ended=1
		elif [[ -z $ended && $w == -* && $w != *=* ]]; then
			while read -r name arg; do
				[[ $name == "$w" && -n $arg && $arg != = ]] && prevarg=$arg
			done <<<"$opts"
		elif [[ -z $ended && $w == -* ]]; then
			:
		else
			pos=$((pos + 1))
			[[ $cmd == record ]] && ended=1
		fi
	done

	if [[ -n $prevarg ]]; then
		# The value of an option: by the name --help gives it.
		local opt=${words[n - 2]}
		case $prevarg in
		PATH | FILE) compopt -o filenames 2>/dev/null; reply=($(compgen -f -- "$cur")) ;;
		DIR | DIRS) compopt -o filenames 2>/dev/null; reply=($(compgen -d -- "$cur")) ;;
		BASE)
			# html --diff-base BASE: a trace, as TRACE
			compopt -o filenames 2>/dev/null
			reply=($(compgen -f -X '!*.trace*' -- "$cur") $(compgen -d -- "$cur")) ;;
		*) reply=($(compgen -W "$(_allocprof_arg_values "$cmd" "$opt" "$prevarg")" -- "$cur")) ;;
		esac
		[[ ${#reply[@]} -eq 1 && ${reply[0]} == *= ]] && compopt -o nospace 2>/dev/null
	elif [[ -z $ended && $cur == -*=* && $cur != *=*=* ]] &&
		_allocprof_options "$cmd" | grep -q -- "^${cur%%=*} [A-Z]"; then
		# --format=FMT: the value after the '=', as after a blank.
		local o=${cur%%=*}
		while read -r name arg; do
			[[ $name == "$o" ]] && break
		done <<<"$opts"
		local v
		for v in $(_allocprof_arg_values "$cmd" "$o" "$arg"); do
			[[ $o=$v == "$cur"* ]] && reply+=("$o=$v")
		done
		[[ ${#reply[@]} -eq 1 && ${reply[0]} == *= ]] && compopt -o nospace 2>/dev/null
	elif [[ -z $ended && $cur == -* ]]; then
		local -a names=()
		while read -r name arg; do
			[[ -n $name ]] && names+=("$name")
		done <<<"$opts"
		reply=($(compgen -W "${names[*]}" -- "$cur"))
		# --gc=gogc: and --sample-index=...: the value follows, no space.
		[[ ${#reply[@]} -eq 1 && ${reply[0]} == *[=:] ]] && compopt -o nospace 2>/dev/null
	elif [[ $cmd == try && -n $ended ]]; then
		# try TRACE -- PROGRAM ARGS: as record's program.
		if ((pos <= 1)); then
			compopt -o filenames 2>/dev/null
			reply=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
		else
			compopt -o default 2>/dev/null
		fi
	elif [[ $cmd == record ]]; then
		if ((pos == 0)); then
			# PROGRAM: a command or a file.
			compopt -o filenames 2>/dev/null
			reply=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
		else
			# The program's own arguments: files, as bash would.
			compopt -o default 2>/dev/null
		fi
	elif [[ $cmd == list && $pos -eq 0 ]]; then
		:	# REGEX
	elif [[ $cmd == calibrate ]]; then
		:
	else
		# TRACE: trace files (allocprof.*.trace, app.trace.1234, ...) and
		# the directories that may hold them.
		compopt -o filenames 2>/dev/null
		reply=($(compgen -f -X '!*.trace*' -- "$cur") $(compgen -d -- "$cur"))
	fi
	# Replace bash's current word, which starts after the last = or :.
	for i in "${!reply[@]}"; do
		COMPREPLY+=("${reply[i]#"$pre"}")
	done
}
complete -F _allocprof allocprof
