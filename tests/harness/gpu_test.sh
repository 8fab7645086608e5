#!/usr/bin/env bash
# The harness's GPU tests in one command, on a machine with an NVIDIA GPU, nvcc and PyTorch:
#   tests/harness/gpu_test.sh [OUT_DIR] [KERNELBENCH_DIR]
# Builds kblaster-harness and harness_check on their own (cmake -S harness) against PyTorch's
# LibTorch, so the machine needs none of the project's other dependencies; then every example
# must verify and be timed, every adversarial .cu must be rejected with its check, and a hanging
# kernel and an illegal memory access must be survived; first, the judge's two ways of comparing
# outputs must agree (compare_check). With KERNELBENCH_DIR (a copy of
# ScalingIntelligence/KernelBench) it also prints the throughput benchmark against KernelBench.
# dlpack.h and nlohmann/json.hpp come from the system, else from .gpu-deps/include.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-harness-gpu}
kernelbench=${2:-}
build=${KBLASTER_HARNESS_GPU_BUILD:-/tmp/kblaster-harness-gpu}
mkdir -p "$out"
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true
KBLASTER_HARNESS_GPU_BUILD=$build "$root/tools/gpu/build_harness.sh" kblaster-harness harness_check compare_check >/dev/null
status=0
echo "output comparison: the device pass against the chunk loop"
"$build/compare_check" || status=$?
"$build/harness_check" --harness "$build/kblaster-harness" --root "$root" --device cuda --cache "$build/cache" \
  --watchdog 10 --max-seconds 1 --json-out "$out/harness-gpu.json" || status=$?
if [[ -n $kernelbench ]]; then
  "$build/harness_check" --harness "$build/kblaster-harness" --root "$root" --device cuda --cache "$build/cache" \
    --only bench --bench 3 --bench-task vector_add --max-seconds 1 --json-out "$out/bench-ours.json" || status=$?
  python3 "$root/tests/harness/kernelbench_bench.py" "$kernelbench" --rounds 3 --json "$out/bench-kernelbench.json" \
    >"$out/kernelbench.log" 2>&1 || { tail -30 "$out/kernelbench.log"; status=1; }
  python3 - "$out/bench-ours.json" "$out/bench-kernelbench.json" "$out/harness-gpu.json" <<'PY' || status=1
import json, sys
ours = [e for e in json.load(open(sys.argv[1])) if e.get("section") == "bench"][0]
kb = json.load(open(sys.argv[2]))
gpu = json.load(open(sys.argv[3]))
ref_ours = [e for e in gpu if e.get("name") == "vector_add"][0]["reply"]["timing"]["reference"]["median_ms"]
print(f"throughput: kblaster-harness {ours['per_minute']:.1f} candidates/minute (compile {ours['compile_s']:.2f} s + "
      f"verify/time {ours['evaluate_s']:.2f} s each), KernelBench {kb['per_minute']:.2f}/minute: "
      f"ratio {ours['per_minute'] / kb['per_minute']:.1f}x")
kb_ref = kb["reference_ms"]
kb_ref_ms = kb_ref.get("median", kb_ref.get("mean"))
print(f"reference time (a + b, 2^22 floats): ours {ref_ours:.4f} ms median, KernelBench {kb_ref_ms:.4f} ms "
      f"({kb_ref}); difference {100 * (ref_ours / kb_ref_ms - 1):+.1f} %")
PY
fi
exit $status
