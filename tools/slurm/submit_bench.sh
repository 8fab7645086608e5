#!/usr/bin/env bash
# Submits a KernelBench bench to Slurm: a job array of N tasks, each one shard of the problems,
# all writing to one run directory (results are atomic files) and one KB, then a report job that
# starts when every task has ended.
#
# Usage: tools/slurm/submit_bench.sh --tasks N --out RUN_DIR [--kb postgresql://...] [--kblaster PATH]
#                                    [--wait] [--sbatch "ARGS"] -- KERNELBENCH_DIR --level 1 [bench options]
#   --kb URI         the KB every task shares: a team PostgreSQL server. Recommended whenever the
#                    tasks run on several hosts: without it the KB is RUN_DIR/kb.sqlite, and
#                    SQLite's WAL needs shared memory that network filesystems (NFS, Lustre) do not
#                    give across hosts. Keep the password out of the URI (it would show in squeue):
#                    libpq reads ~/.pgpass.
#   --sbatch "ARGS"  extra sbatch arguments for the array tasks, e.g. "--gres=gpu:1 -p gpu -t 4:00:00"
#   --wait           return when the report job has finished (its exit status)
# Prints the array job id and the report job id. Logs: RUN_DIR/slurm/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tasks="" out="" kblaster="" wait_flag="" sbatch_args="" kb_args=()
while (($#)); do
  case $1 in
    --tasks) tasks=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --kblaster) kblaster=$2; shift 2 ;;
    --kb) kb_args=(--kb "$2"); shift 2 ;;
    --sbatch) sbatch_args=$2; shift 2 ;;
    --wait) wait_flag=--wait; shift ;;
    --) shift; break ;;
    *) echo "submit_bench.sh: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
if [[ -z $tasks || -z $out || $# -eq 0 ]] || ! [[ $tasks =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 --tasks N --out RUN_DIR [--kb postgresql://...] [--kblaster PATH] [--wait] [--sbatch ARGS] -- KERNELBENCH_DIR --level N ..." >&2
  exit 2
fi
kblaster=${kblaster:-$(command -v kblaster || true)}
[[ -x $kblaster ]] || { echo "submit_bench.sh: kblaster not found; pass --kblaster PATH" >&2; exit 2; }
command -v sbatch >/dev/null || { echo "submit_bench.sh: sbatch not found (is Slurm installed?)" >&2; exit 2; }
mkdir -p "$out/slurm"
out=$(cd "$out" && pwd)
kblaster=$(cd "$(dirname "$kblaster")" && pwd)/$(basename "$kblaster")
# shellcheck disable=SC2086  # sbatch_args is a list of words by design
array=$(sbatch --parsable --job-name=kblaster-bench --array="0-$((tasks - 1))" $sbatch_args \
  --output="$out/slurm/task_%A_%a.log" "$here/bench_task.sh" "$kblaster" "$@" "${kb_args[@]}" --out "$out")
array=${array%%;*}
report=$(sbatch --parsable $wait_flag --job-name=kblaster-bench-report --dependency="afterany:$array" \
  --output="$out/slurm/report_%j.log" "$here/bench_report.sh" "$kblaster" "$out")
echo "array job $array, report job ${report%%;*}; results in $out"
