#!/usr/bin/env bash
# The loop on a GPU in one command (label gpu), on a machine with an NVIDIA GPU, nvcc, ncu and
# PyTorch (for its LibTorch):
#   tests/optimize/gpu_loop_test.sh [KBLASTER] [OUT_DIR]
# KBLASTER is the kblaster executable (default: ${KBLASTER_BUILD_DIR:-build}/cli/kblaster).
# kblaster-harness is built against PyTorch's LibTorch by tools/gpu/build_harness.sh.
# Phases (KBLASTER_GPU_PHASES, default "loop mechanical"):
#   loop:       the whole loop with the answer book as model and the real harness and ncu, on
#               vector_add, row_softmax and sum_reduction (breadth 2, depth 2, 2 iterations);
#   mechanical: the mechanical tier alone (--no-llm) on every example task.
# Every GPU result is recorded (OUT_DIR/recordings/*.jsonl) so CI can replay the same runs, and
# a table of measured speedups over the naive input is printed at the end.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kblaster=${1:-${KBLASTER_BUILD_DIR:-$root/build}/cli/kblaster}
out=${2:-$root/build-optimize-gpu}
phases=${KBLASTER_GPU_PHASES:-loop mechanical}
mkdir -p "$out/recordings" "$out/runs"
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include
fi
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
if [[ -z ${KBLASTER_GPU_HARNESS:-} ]]; then
  KBLASTER_GPU_HARNESS=$("$root/tools/gpu/build_harness.sh" | tail -1) || exit 1
fi
export KBLASTER_HARNESS=$KBLASTER_GPU_HARNESS
status=0
run() {  # run NAME TASK ARGS...: one optimize run with a fresh KB, recorded
  local name=$1 task=$2
  shift 2
  rm -rf "$out/runs/$name" "$out/runs/$name.sqlite" "$out/recordings/$name.jsonl"
  local start=$SECONDS
  "$kblaster" optimize "$root/examples/tasks/$task" --kb "$out/runs/$name.sqlite" --out "$out/runs/$name" \
    --harness-record "$out/recordings/$name.jsonl" --seed 1 "$@" >"$out/runs/$name.log" 2>&1 ||
    { echo "gpu_loop_test: $name FAILED"; tail -15 "$out/runs/$name.log"; status=1; }
  echo "gpu_loop_test: $name: $((SECONDS - start)) s: $(head -1 "$out/runs/$name.log")"
}
for phase in $phases; do
  case $phase in
    loop)
      for task in ${KBLASTER_GPU_LOOP_TASKS:-vector_add row_softmax sum_reduction}; do
        run "loop-$task" "$task" --replay "$root/tests/optimize/answer_book.jsonl" --breadth 2 --depth 2 --iterations 2
      done ;;
    mechanical)
      for task in ${KBLASTER_GPU_MECH_TASKS:-vector_add sum_reduction row_softmax layer_norm square_matmul gemm_bias_relu}; do
        run "mechanical-$task" "$task" --no-llm --breadth ${KBLASTER_GPU_MECH_BREADTH:-2} --depth ${KBLASTER_GPU_MECH_DEPTH:-3} \
          --iterations 1 ${KBLASTER_GPU_LOOP_ARGS:-}
      done ;;
  esac
done
python3 - "$out/runs" <<'PY'
import json, pathlib, sys
rows = []
for rep in sorted(pathlib.Path(sys.argv[1]).glob("*/report.json")):
    r = json.loads(rep.read_text())
    i, b, t = r["input"], r["best"], r["totals"]
    ref = i.get("reference_ms")
    rows.append((rep.parent.name, r["tier"], i["runtime_ms"], b["runtime_ms"], b["speedup_over_input"], ref,
                 (ref / b["runtime_ms"]) if ref else None, t["candidates"], t["attempts"], t["gpu_seconds"], r["gpu"]))
print("| run | tier | input ms | best ms | speedup over input | PyTorch ms | best vs PyTorch | candidates | attempts | GPU s |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for n, tier, a, b, s, ref, vs, c, att, g, gpu in rows:
    f = lambda v, d=4: "-" if v is None else f"{v:.{d}f}"
    print(f"| {n} | {tier} | {f(a)} | {f(b)} | {s:.2f}x | {f(ref)} | {f(vs, 2)}x | {c} | {att} | {g:.1f} |")
if rows: print(f"GPU: {rows[0][-1]}")
# Where each candidate's seconds went (the report's cost_per_candidate: medians over the run).
print()
# The input kernel apart (measured and profiled once per run), and the median with it counted.
print("| run | candidates | profiled | median device s | runner | verify | time | profile | build | build waited | mean device s | with the input | the input |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for rep in sorted(pathlib.Path(sys.argv[1]).glob("*/report.json")):
    r = json.loads(rep.read_text())
    c = r.get("cost_per_candidate")
    if not c: continue
    m = c["median_phase_seconds"]
    i = r.get("input_cost", {})
    w = c.get("median_device_seconds_with_input")
    w = "-" if w is None else f"{w:.2f}"
    i = "-" if "device_seconds" not in i else f"{i['device_seconds']:.2f}"
    print(f"| {rep.parent.name} | {c['candidates']} | {c['profiled']} | {c['median_device_seconds']:.2f} | {m['runner']:.2f} | "
          f"{m['verify']:.2f} | {m['time']:.2f} | {m['profile']:.2f} | {m['build']:.2f} | {m['build_wait']:.2f} | {c['mean_device_seconds']:.2f} | "
          f"{w} | {i} |")
PY
exit $status
