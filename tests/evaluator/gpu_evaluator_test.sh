#!/usr/bin/env bash
# The live evaluator's GPU test in one command, on a machine with an NVIDIA GPU, nvcc, ncu and
# PyTorch (for its LibTorch):
#   tests/evaluator/gpu_evaluator_test.sh [TEST_BINARY] [OUT_DIR]
# TEST_BINARY is test_harness_evaluator_gpu built on a developer machine (it needs none of the
# project's libraries at run time); default: ${KBLASTER_BUILD_DIR:-build}/tests/evaluator/.
# kblaster-harness is built against PyTorch's LibTorch by tools/gpu/build_harness.sh (the build
# folder every GPU script shares), unless KBLASTER_GPU_HARNESS names a CUDA harness.
# OUT_DIR (default build-evaluator-gpu/) receives the log and vector_add-recording.jsonl (the
# evaluations as a recording that replays in CI); sources, builds and the ncu reports go to
# $KBLASTER_EVALUATOR_WORK (default /tmp/kblaster-evaluator-gpu-work).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${KBLASTER_BUILD_DIR:-$root/build}/tests/evaluator/test_harness_evaluator_gpu}
out=${2:-$root/build-evaluator-gpu}
mkdir -p "$out"
if [[ ! -x $bin ]]; then
  echo "gpu_evaluator_test: $bin is not built (build test_harness_evaluator_gpu, or give its path)" >&2
  exit 2
fi
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include  # for the candidates' nvcc builds too
fi
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || true
if [[ -z ${KBLASTER_GPU_HARNESS:-} ]]; then
  KBLASTER_GPU_HARNESS=$("$root/tools/gpu/build_harness.sh" | tail -1) || exit 1
fi
rm -f "$out/vector_add-recording.jsonl"
export KBLASTER_HARNESS=$KBLASTER_GPU_HARNESS KBLASTER_ROOT=$root KBLASTER_EVALUATOR_WORK=${KBLASTER_EVALUATOR_WORK:-/tmp/kblaster-evaluator-gpu-work} \
  KBLASTER_EVALUATOR_RECORDING=$out/vector_add-recording.jsonl
status=0
"$bin" 2>&1 | tee "$out/evaluator-gpu.log" || status=$?
echo "gpu_evaluator_test: log $out/evaluator-gpu.log, recording $out/vector_add-recording.jsonl"
exit $status
