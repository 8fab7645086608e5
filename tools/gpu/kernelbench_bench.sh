#!/usr/bin/env bash
# The GPU run of the KernelBench evaluation in one command, on a machine with an NVIDIA GPU, nvcc
# and PyTorch (for its LibTorch and the problems' export):
#   tools/gpu/kernelbench_bench.sh KERNELBENCH_DIR OUT_DIR [kblaster bench options...]
# Runs `kblaster bench` on levels 1 and 2 (KBLASTER_BENCH_LEVELS, e.g. "1") over the problems
# of tools/kernelbench_initial/problems.txt (or KBLASTER_BENCH_PROBLEMS, comma-separated names)
# that those levels hold, starting each from its hand-written naive kernel there, with the mechanical tier
# (no model) unless the options say otherwise; then draws OUT_DIR/plots/fast_p.png and
# speedup_hist.png (tools/bench_plot.py). The run resumes where an earlier one in OUT_DIR stopped.
# KBLASTER: the kblaster executable (default .gpu-bin/kblaster, else build/cli/kblaster);
# KBLASTER_GPU_HARNESS: a CUDA kblaster-harness (default: built by tools/gpu/build_harness.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 2 ]] || { sed -n 2,10p "$0" >&2; exit 2; }
kernelbench=$1 out=$2
shift 2
kblaster=${KBLASTER:-$root/.gpu-bin/kblaster}
[[ -x $kblaster ]] || kblaster=$root/build/cli/kblaster
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include  # the candidates' nvcc builds include it
fi
harness=${KBLASTER_GPU_HARNESS:-$("$root/tools/gpu/build_harness.sh" | tail -1)} || exit 1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
levels=(${KBLASTER_BENCH_LEVELS:-1 2})
selection=() level_args=()
for name in $(echo "${KBLASTER_BENCH_PROBLEMS:-$(grep -v '^#' "$root/tools/kernelbench_initial/problems.txt")}" | tr ',' ' '); do
  for l in "${levels[@]}"; do
    if [[ -f $kernelbench/level$l/$name.py || -f $kernelbench/KernelBench/level$l/$name.py ]]; then
      selection+=("$name")
      break
    fi
  done
done
for l in "${levels[@]}"; do level_args+=(--level "$l"); done
[[ ${#selection[@]} -gt 0 ]] || { echo "kernelbench_bench: none of problems.txt is in $kernelbench levels ${levels[*]}" >&2; exit 2; }
status=0
"$kblaster" bench "$kernelbench" "${level_args[@]}" --problems "$(IFS=,; echo "${selection[*]}")" --out "$out" \
  --kernels "$root/tools/kernelbench_initial" --harness "$harness" --python "${PYTHON:-python3}" "$@" || status=$?
if [[ -f $out/metrics.json ]]; then
  python3 "$root/tools/bench_plot.py" "$out/metrics.json" --out "$out/plots" || status=1
fi
exit $status
