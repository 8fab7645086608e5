#!/usr/bin/env bash
# One Slurm array task of a KernelBench bench: runs shard SLURM_ARRAY_TASK_ID of
# SLURM_ARRAY_TASK_COUNT into the shared run directory (and the shared KB). Submitted by
# tools/slurm/submit_bench.sh; arguments: KBLASTER BENCH_ARGS...
set -euo pipefail
kblaster=$1
shift
: "${SLURM_ARRAY_TASK_ID:?not inside a Slurm array task}"
count=${SLURM_ARRAY_TASK_COUNT:-$((SLURM_ARRAY_TASK_MAX + 1))}
exec "$kblaster" bench "$@" --shard "$SLURM_ARRAY_TASK_ID/$count" \
  --worker "slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}@$(hostname -s)" --no-report
