#!/usr/bin/env bash
# A tlbsim sweep as a Slurm job array, K runs per array task, merged back into the CSV the
# in-process sweep writes, byte for byte.  docs/clusters.md tells the whole story.
#
# Usage: scripts/slurm-sweep.sh [-k K] [-o OUT.csv] [-d DIR] [-j JOBS] [--max-array-size M]
#                               [--dry-run | --local] -- TLBSIM sweep ARGS...
#
#   -k K                 runs per array task (default 1; raised when the tasks would be more
#                        than --max-array-size, with a note on stderr)
#   -o OUT.csv           the merged CSV (default DIR/sweep.csv)
#   -d DIR               the job directory, on a file system the nodes share (default: a new
#                        slurm-sweep.XXXXXX in the current directory)
#   --max-array-size M   the cluster's MaxArraySize (default 1001, Slurm's default): at most M
#                        array tasks, 0 to M-1
#   --dry-run            write DIR and say how to submit it, submit nothing
#   --local              run the array tasks here with GNU parallel (-j JOBS at once, default
#                        the CPUs), then merge: the same files as on a cluster
#   (neither)            sbatch the array, and the merge as a job that waits for it
#
# ARGS are tlbsim sweep's, without -o and --append (the merge writes OUT.csv).  DIR holds
# commands.txt (`TLBSIM sweep ARGS --emit-commands`: line n is run n), task.sh (array task i
# runs lines i*K+1 .. i*K+K in order into out/task-i.csv), array.sbatch, merge.sh and log/.
# Extra sbatch settings (partition, account, time): the SBATCH_* environment variables, or
# sbatch's own options after --dry-run (`sbatch -p short DIR/array.sbatch`).
# Exit: 0 done (or submitted); 2 bad usage; the sweep's code if it refuses its arguments;
# 1 a task or the merge failed.
set -euo pipefail

# --help: the comment above, on stdout.
usage()
{
	sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
	exit 0
}

die()
{
	echo "slurm-sweep.sh: $*" >&2
	exit 2
}

k=1 out="" dir="" jobs="" max_array=1001 mode=submit
while [ $# -gt 0 ]; do
	case $1 in
	-k) k=${2:?-k needs a number}; shift ;;
	-o) out=${2:?-o needs a file}; shift ;;
	-d) dir=${2:?-d needs a directory}; shift ;;
	-j) jobs=${2:?-j needs a number}; shift ;;
	--max-array-size) max_array=${2:?--max-array-size needs a number}; shift ;;
	--dry-run) mode=dry-run ;;
	--local) mode=local ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) die "unknown option \"$1\" (options come before -- TLBSIM sweep ARGS...)" ;;
	esac
	shift
done
[ $# -ge 2 ] && [ "$2" = sweep ] || die "expected -- TLBSIM sweep ARGS... after the options"
for n in "$k" "$max_array" ${jobs:+"$jobs"}; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "-k, -j and --max-array-size take a positive number, not \"$n\""
done
for arg in "${@:3}"; do
	case $arg in
	-o | --output | --output=* | -a | --append)
		die "$arg: the merge writes the CSV; give it as slurm-sweep.sh -o OUT.csv" ;;
	esac
done

# Grid order is line order: run n is line n (and carries --label run=n); without -o, run 1
# prints the header and the others --no-header, so the lines' outputs in order are the CSV.
# Emitted first: a sweep that refuses its arguments leaves no job directory behind.
commands=$(mktemp)
trap 'rm -f "$commands"' EXIT
code=0
"$@" --emit-commands > "$commands" || code=$?
[ $code -eq 0 ] || { echo "slurm-sweep.sh: $* --emit-commands failed (exit $code)" >&2; exit $code; }

# The job directory, absolute: the nodes run its scripts from anywhere.
if [ -n "$dir" ]; then
	mkdir -p "$dir"
	[ -z "$(ls -A "$dir")" ] || die "$dir is not empty (a job directory is written once)"
else
	dir=$(mktemp -d slurm-sweep.XXXXXX)
fi
dir=$(cd "$dir" && pwd)
out=${out:-$dir/sweep.csv}
case $out in /*) ;; *) out=$PWD/$out ;; esac
case $dir$out in *\'*) die "no ' in the job directory or the output's path, please" ;; esac
mkdir -p "$dir/out" "$dir/log"
mv "$commands" "$dir/commands.txt"
runs=$(wc -l < "$dir/commands.txt")
[ "$runs" -gt 0 ] || die "the sweep has no runs"

# ceil(runs / k) tasks, at most max_array of them.
tasks=$(((runs + k - 1) / k))
if [ $tasks -gt "$max_array" ]; then
	wanted=$k
	k=$(((runs + max_array - 1) / max_array))
	tasks=$(((runs + k - 1) / k))
	echo "slurm-sweep.sh: $runs runs at -k $wanted would be more than $max_array array tasks" \
		"(MaxArraySize): -k $k, $tasks tasks" >&2
fi

cat > "$dir/task.sh" <<EOF
#!/bin/sh
# Array task ID (\$1, else \$SLURM_ARRAY_TASK_ID): runs $k lines of commands.txt from line
# ID*$k+1, in order, appending their CSV to out/task-ID.csv.part, renamed to out/task-ID.csv
# once all succeeded: a task run again starts afresh, and merge.sh sees only whole tasks.
set -eu
dir='$dir'
id=\${1:-\${SLURM_ARRAY_TASK_ID:?neither an argument nor SLURM_ARRAY_TASK_ID}}
first=\$((id * $k + 1))
part="\$dir/out/task-\$id.csv.part"
: > "\$part"
n=\$first
sed -n "\${first},\$((first + $k - 1))p" "\$dir/commands.txt" > "\$part.commands"
while IFS= read -r command; do
	sh -c "\$command" < /dev/null >> "\$part" || {
		code=\$?
		echo "task \$id: run \$n failed (exit \$code): \$command" >&2
		exit \$code
	}
	n=\$((n + 1))
done < "\$part.commands"
rm -f "\$part.commands"
mv "\$part" "\$dir/out/task-\$id.csv"
EOF

cat > "$dir/array.sbatch" <<EOF
#!/bin/sh
#SBATCH --job-name=tlbsim-sweep
#SBATCH --array=0-$((tasks - 1))
#SBATCH --output=$dir/log/task-%a.out
# $runs runs, $k per task: task.sh runs its lines of commands.txt.
exec sh '$dir/task.sh' "\$SLURM_ARRAY_TASK_ID"
EOF

cat > "$dir/merge.sh" <<EOF
#!/bin/sh
# out/task-0.csv .. out/task-$((tasks - 1)).csv in task order into $out: task i holds runs
# i*$k+1 .. i*$k+$k in grid order and task 0 the header, so this is the in-process sweep's CSV.
# Refuses while a task has no CSV (failed, or not run yet), naming them.
set -eu
dir='$dir'
out='$out'
missing=""
i=0
while [ \$i -lt $tasks ]; do
	[ -f "\$dir/out/task-\$i.csv" ] || missing="\$missing\${missing:+,}\$i"
	i=\$((i + 1))
done
if [ -n "\$missing" ]; then
	echo "merge.sh: tasks \$missing have no CSV (failed or not run; see \$dir/log/):" \\
		"sbatch --array=\$missing \$dir/array.sbatch, then merge again" >&2
	exit 1
fi
i=0
while [ \$i -lt $tasks ]; do
	cat "\$dir/out/task-\$i.csv"
	i=\$((i + 1))
done > "\$out.tmp.\$\$"
mv "\$out.tmp.\$\$" "\$out"
EOF

echo "slurm-sweep.sh: $runs runs, $k per task, $tasks array tasks in $dir" >&2
case $mode in
dry-run)
	echo "submit: sbatch $dir/array.sbatch; when it is done: sh $dir/merge.sh (writes $out)" >&2 ;;
local)
	command -v parallel > /dev/null || die "--local needs GNU parallel"
	parallel --will-cite --halt soon,fail=1 ${jobs:+-j "$jobs"} sh "$dir/task.sh" {} \
		::: $(seq 0 $((tasks - 1))) || { echo "slurm-sweep.sh: a task failed" >&2; exit 1; }
	sh "$dir/merge.sh" || exit 1
	echo "slurm-sweep.sh: wrote $out" >&2 ;;
submit)
	command -v sbatch > /dev/null || die "sbatch not found (--local runs the tasks here)"
	array=$(sbatch --parsable "$dir/array.sbatch")
	array=${array%%;*}
	merge=$(sbatch --parsable --job-name=tlbsim-merge --dependency="afterok:$array" \
		--output="$dir/log/merge.out" --wrap "sh '$dir/merge.sh'")
	echo "slurm-sweep.sh: array job $array, merge job ${merge%%;*} (writes $out)" >&2 ;;
esac
