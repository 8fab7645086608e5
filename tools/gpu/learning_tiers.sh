#!/usr/bin/env bash
# The learning-curve experiment of issue 49 on a GPU machine: both tiers, several selection
# policies, one import of each problem.
#   tools/gpu/learning_tiers.sh PROBLEMS_DIR OUT_DIR EXPERIMENT...
# EXPERIMENT is TIER-POLICY: TIER mechanical (the no-model tier) or model (the hand-written answer
# book of tests/bench_pipeline/learning_book, which lowers whichever technique the KB picks),
# POLICY one of kblaster's selection policies (ucb, weighted, thompson).
# Each experiment runs `tools/gpu/learning_curve.sh` in OUT_DIR/EXPERIMENT, every one of them
# reading the problems imported once into OUT_DIR/tasks (in parallel, up to 8 at a time, without
# timing the reference, which the learning curve never reads), and records every measurement to
# OUT_DIR/EXPERIMENT/measurements.jsonl for the CPU's replay (tests/bench_pipeline/learning_test.py).
# The sets: LEARN_TRAIN, LEARN_TEST (default: 9 training and 10 held-out problems of KernelBench
# levels 1 and 2 and the example tasks, each held-out one with a sibling in training); the loop's
# settings: LEARN_ARGS (default below). LEARN_SECONDS=N stops each experiment after N seconds (a
# SIGINT: the bench writes the report of what it measured; the same command resumes it).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[[ $# -ge 3 ]] || { sed -n 2,15p "$0" >&2; exit 2; }
problems=$(cd "$1" && pwd) out=$(mkdir -p "$2" && cd "$2" && pwd)
shift 2
kblaster=${KBLASTER:-$root/build/cli/kblaster}
export LEARN_TRAIN=${LEARN_TRAIN:-19_ReLU,21_Sigmoid,26_GELU_,23_Softmax,47_Sum_reduction_over_a_dimension,row_softmax,12_Gemm_Multiply_LeakyReLU,40_Matmul_Scaling_ResidualAdd,63_Gemm_ReLU_Divide}
export LEARN_TEST=${LEARN_TEST:-20_LeakyReLU,22_Tanh,25_Swish,29_Softplus,24_LogSoftmax,36_RMSNorm_,layer_norm,49_Max_reduction_over_a_dimension,76_Gemm_Add_ReLU,86_Matmul_Divide_GELU}
export LEARN_ARGS=${LEARN_ARGS:---train-breadth 2 --breadth 2 --depth 2 --iterations 1 --top-k 3 --budget-candidates 8 --seeds 1,2,3}
export KBLASTER_GPU_HARNESS=${KBLASTER_GPU_HARNESS:-$("$root/tools/gpu/build_harness.sh" | tail -1)} || exit 1
export KBLASTER_KERNELBENCH_EXPORTER=${KBLASTER_KERNELBENCH_EXPORTER:-$root/tools/kernelbench_export.py}

# One import per problem, shared by every experiment.
mkdir -p "$out/tasks"
for level in 1 2; do
  for f in "$problems"/level$level/*.py; do
    [[ -e $f ]] || continue
    dir=$out/tasks/L${level}_$(basename "$f" .py)
    [[ -f $dir/task.json ]] && continue
    "$kblaster" import kernelbench "$f" --out "$dir" --device cuda --no-timing --harness "$KBLASTER_GPU_HARNESS" \
      >"$dir.log" 2>&1 &
    while (( $(jobs -rp | wc -l) >= 8 )); do wait -n; done
  done
done
wait
echo "imports: $(ls -d "$out"/tasks/*/ | wc -l) tasks"

book=$out/book.jsonl
"$root/tests/bench_pipeline/learning_book/make_book.py" >"$book" || exit 1
for experiment in "$@"; do
  tier=${experiment%%-*} policy=${experiment#*-}
  extra=(--policy "$policy")
  [[ $tier == model ]] && extra+=(--replay "$book" --no-mechanical-first)
  mkdir -p "$out/$experiment/run"
  ln -sfn "$out/tasks" "$out/$experiment/run/tasks"
  start=$(date +%s)
  limit=()
  [[ -n ${LEARN_SECONDS:-} ]] && limit=(timeout -s INT "$LEARN_SECONDS")
  "${limit[@]}" "$root/tools/gpu/learning_curve.sh" "$problems" "$out/$experiment" "${extra[@]}" >>"$out/$experiment/bench.log" 2>&1
  echo "$experiment: exit $?, $(( $(date +%s) - start )) s"
  tail -4 "$out/$experiment/bench.log"
done
