#!/usr/bin/env bash
# The learning-curve experiment (issue 38) on a GPU machine in one command:
#   tools/gpu/learning_curve.sh PROBLEMS_DIR OUT_DIR [kblaster bench options...]
# PROBLEMS_DIR holds KernelBench problems as PROBLEMS_DIR/levelN/NAME.py (e.g. the shrunk copies
# tools/kernelbench_initial/shrink_problems.py writes). The bench reads OUT_DIR/tree: those
# problems, plus the example tasks as task folders (gemm_bias_relu under level2, the others under
# level1). Then `kblaster bench --learning-curve` runs with the mechanical tier, starting each
# KernelBench problem from its naive kernel in tools/kernelbench_initial, and records every
# measurement to OUT_DIR/measurements.jsonl, so that the CPU can replay the whole experiment
# (`--harness-replay`; tests/bench_pipeline/learning_test.sh does).
# The sets and the loop's settings: LEARN_TRAIN, LEARN_TEST (selections, as --problems), LEARN_ARGS
# (default: the training arm 3 trajectories, the held-out runs 2, of one step each, one iteration,
# 8 candidates (the input and 7 attempts) per held-out run, seeds 1 and 2, a foreign arm labelled
# sm_80); options after OUT_DIR are added.
# The bench is exec'd, so that a SIGINT (timeout -s INT) reaches it: it stops at once and still writes
# the report of what was measured; the same command resumes.
# KBLASTER: the kblaster executable (default build/cli/kblaster); KBLASTER_GPU_HARNESS: a CUDA
# kblaster-harness (default: built by tools/gpu/build_harness.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 2 ]] || { sed -n 2,17p "$0" >&2; exit 2; }
problems=$(cd "$1" && pwd) out=$2
shift 2
kblaster=${KBLASTER:-$root/build/cli/kblaster}
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include && -z ${KBLASTER_DLPACK_INCLUDE:-} ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include  # the candidates' nvcc builds include it
fi
harness=${KBLASTER_GPU_HARNESS:-$("$root/tools/gpu/build_harness.sh" | tail -1)} || exit 1
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
mkdir -p "$out/tree/level1" "$out/tree/level2"
for level in 1 2; do
  for f in "$problems"/level$level/*.py; do [[ -e $f ]] && ln -sfn "$f" "$out/tree/level$level/"; done
done
for task in "$root"/examples/tasks/*/; do
  name=$(basename "$task")
  level=1
  [[ $name == gemm_bias_relu ]] && level=2
  ln -sfn "$task" "$out/tree/level$level/$name"
done
train=${LEARN_TRAIN:-21_Sigmoid,47_Sum_reduction_over_a_dimension,12_Gemm_Multiply_LeakyReLU,row_softmax}
test=${LEARN_TEST:-22_Tanh,49_Max_reduction_over_a_dimension,76_Gemm_Add_ReLU,layer_norm}
read -ra settings <<<"${LEARN_ARGS:---train-breadth 3 --breadth 2 --depth 1 --iterations 1 --budget-candidates 8 --seeds 1,2 --foreign-arch sm_80}"
exec "$kblaster" bench "$out/tree" --level 1 --level 2 --learning-curve --train "$train" --test "$test" \
  --out "$out/run" --kernels "$root/tools/kernelbench_initial" --harness "$harness" --python "${PYTHON:-python3}" \
  --timing-seconds 0 --harness-record "$out/measurements.jsonl" "${settings[@]}" "$@"
