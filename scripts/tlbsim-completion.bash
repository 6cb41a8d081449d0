# bash completion for tlbsim, installed as share/bash-completion/completions/tlbsim
# (bash-completion loads it on the first <TAB> after "tlbsim"); or: source it.
#
# Everything it offers comes from the tlbsim being completed, at <TAB> time, so it
# cannot drift from the binary: the options from `tlbsim [sweep] --help`, the bundled
# names after -T, -w, -p (and --vary topology=...) from --list-topologies and the
# others, the keys after --set and --vary from `tlbsim -T ... -w ... -p ... --list-keys`
# with the inputs already on the line (without them, the kinds "topology." ...).
# Needs only bash: not bash-completion's helpers.

# The words of the line joined again where bash split them at '=' (COMP_WORDBREAKS):
# sets _tlbsim_w (the words) and _tlbsim_c (the index of the word under the cursor).
_tlbsim_join_words()
{
	_tlbsim_w=() _tlbsim_c=0
	local i w joined=0
	for ((i = 0; i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		if ((i > 1)) && [[ $w == "=" || $joined == 1 ]]; then
			_tlbsim_w[${#_tlbsim_w[@]} - 1]+=$w
			[[ $w == "=" ]] && joined=1 || joined=0
		else
			_tlbsim_w+=("$w")
			joined=0
		fi
		((i == COMP_CWORD)) && _tlbsim_c=$((${#_tlbsim_w[@]} - 1))
	done
	return 0
}

# The first words of `tlbsim --list-KIND` (KIND: topologies, workloads, policies).
_tlbsim_names()
{
	"$_tlbsim_prog" "--list-$1" 2>/dev/null | while read -r name _; do
		printf '%s\n' "$name"
	done
}

# The long options of `tlbsim [sweep] --help`.
_tlbsim_options()
{
	"$_tlbsim_prog" $_tlbsim_sweep --help 2>/dev/null |
		sed -n 's/^  \(-[[:alnum:]], \)\{0,1\}\(--[[:alnum:]-]*\).*/\2/p'
}

# The --set keys of the inputs already on the line (-T, -w, -p), each with "=";
# without any, the three kinds.
_tlbsim_keys()
{
	local i w inputs=()
	for ((i = 1; i < ${#_tlbsim_w[@]}; i++)); do
		((i == _tlbsim_c)) && continue
		w=${_tlbsim_w[i]}
		case $w in
		-T | --topology | -w | --workload | -p | --policy)
			((i + 1 != _tlbsim_c)) && [[ -n ${_tlbsim_w[i + 1]:-} ]] &&
				inputs+=("$w" "${_tlbsim_w[i + 1]}") ;;
		--topology=?* | --workload=?* | --policy=?*) inputs+=("$w") ;;
		esac
	done
	if ((${#inputs[@]} == 0)); then
		printf '%s\n' topology. workload. policy.
		return
	fi
	"$_tlbsim_prog" "${inputs[@]}" --list-keys 2>/dev/null | sed 's/$/=/'
}

# COMPREPLY: the words of $1 (one a line) that start with $2.
_tlbsim_reply()
{
	local word
	while IFS= read -r word; do
		[[ $word == "$2"* ]] && COMPREPLY+=("$word")
	done <<<"$1"
	return 0
}

# --vary's words: keys, or the bundled names after topology=, workload=, policy=
# (comma-separated: the names complete after the last comma).
_tlbsim_vary()
{
	local cur=$1 kind name
	case $cur in
	topology=*) kind=topologies ;;
	workload=*) kind=workloads ;;
	policy=*) kind=policies ;;
	*=*) return 0 ;;
	*)
		_tlbsim_reply "$(_tlbsim_keys; printf '%s\n' topology= workload= policy=)" "$cur"
		return 0 ;;
	esac
	local done=${cur%"${cur##*[=,]}"}
	_tlbsim_reply "$(_tlbsim_names $kind | while read -r name; do
		printf '%s\n' "$done$name"
	done)" "$cur"
}

_tlbsim()
{
	COMPREPLY=()
	_tlbsim_join_words
	local _tlbsim_prog=${COMP_WORDS[0]/#\~/$HOME} _tlbsim_sweep=
	[[ ${COMP_WORDS[1]:-} == sweep && $COMP_CWORD -gt 1 ]] && _tlbsim_sweep=sweep
	local whole=${_tlbsim_w[_tlbsim_c]} prev=
	local cur=$whole
	((_tlbsim_c > 0)) && prev=${_tlbsim_w[_tlbsim_c - 1]}
	if [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		cur=${cur#*=}
	fi
	case $prev in
	-T | --topology | -w | --workload | -p | --policy)
		local kind=topologies
		[[ $prev == -w || $prev == --workload ]] && kind=workloads
		[[ $prev == -p || $prev == --policy ]] && kind=policies
		_tlbsim_reply "$(_tlbsim_names $kind; compgen -f -- "$cur")" "$cur"
		compopt -o filenames 2>/dev/null ;;
	-o | --output | --per-cpu | --trace | --timeseries)
		_tlbsim_reply "$(compgen -f -- "$cur")" "$cur"
		compopt -o filenames 2>/dev/null ;;
	-s | --set)
		[[ $cur == *=* ]] && return 0
		_tlbsim_reply "$(_tlbsim_keys)" "$cur"
		compopt -o nospace 2>/dev/null ;;
	--vary)
		_tlbsim_vary "$cur"
		compopt -o nospace 2>/dev/null ;;
	--seed | --max-events | --max-sim-ns | --max-wall-seconds | --label | --trace-window | \
		--trace-max-events | --interval | --sample-plan | -j | --jobs | --threads) ;;
	*)
		if [[ $cur == -* ]]; then
			_tlbsim_reply "$(_tlbsim_options)" "$cur"
		elif ((_tlbsim_c == 1)); then
			_tlbsim_reply sweep "$cur"
		fi ;;
	esac
	((${#COMPREPLY[@]})) || return 0
	# The replies complete $cur; bash replaces the text after the word's last '='
	# when '=' breaks words (the default), else the whole word.
	if [[ $COMP_WORDBREAKS == *=* ]]; then
		local cut=${cur%"${cur##*=}"}
		COMPREPLY=("${COMPREPLY[@]#"$cut"}")
	else
		local before=${whole%"$cur"}
		COMPREPLY=("${COMPREPLY[@]/#/$before}")
	fi
	return 0
}
complete -F _tlbsim tlbsim
