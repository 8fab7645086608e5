#!/usr/bin/env python3
"""KernelBench's own evaluation throughput, for comparison with kblaster-harness.

Runs ScalingIntelligence/KernelBench's eval_kernel_against_ref (compile with load_inline, check
correctness, time with CUDA events) on the vector-add problem that examples/tasks/vector_add
poses (c = a + b over 2^22 floats) with an equivalent naive candidate, N times with a fresh build
each time, and prints candidates evaluated per minute and KernelBench's reference time. Needs a
copy of KernelBench (never committed: bring it to the machine and name its folder here).

usage: kernelbench_bench.py KERNELBENCH_DIR [--rounds N] [--json OUT]
Written for KernelBlaster's harness benchmark.
"""
import argparse, json, os, sys, tempfile, time, types

PROBLEM = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, a, b):
        return a + b

def get_inputs():
    return [torch.randn(4194304), torch.randn(4194304)]

def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <cuda_runtime.h>
__global__ void vector_add(const float* a, const float* b, float* c, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor vector_add_cuda(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty_like(a);
  const long long n = a.numel();
  vector_add<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  return c;
}
"""
ext = load_inline(name="vector_add_NAME", cpp_sources="torch::Tensor vector_add_cuda(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=source, functions=["vector_add_cuda"], verbose=False)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, a, b):
        return ext.vector_add_cuda(a, b)
'''


def stub_missing(name, **attrs):
    """KernelBench's utils import LLM clients the evaluation never calls; stub them when absent."""
    try:
        __import__(name)
    except ImportError:
        m = types.ModuleType(name)
        for k, v in attrs.items():
            setattr(m, k, v)
        sys.modules[name] = m


class _BaseModel:
    def __init__(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)

    def __repr__(self):
        return repr(self.__dict__)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernelbench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.kernelbench, "src"))
    stub_missing("pydantic", BaseModel=_BaseModel)
    stub_missing("dotenv", load_dotenv=lambda *a, **k: None)
    stub_missing("openai", OpenAI=object)
    stub_missing("litellm", completion=None)
    import torch
    from kernelbench import eval as kb_eval, timing as kb_timing

    results = []
    t0 = time.time()
    for r in range(args.rounds):
        build_dir = tempfile.mkdtemp(prefix="kb-bench-")
        s = time.time()
        res = kb_eval.eval_kernel_against_ref(PROBLEM, CANDIDATE.replace("NAME", f"{os.getpid()}_{r}"),
                                              seed_num=42 + r, num_correct_trials=3, num_perf_trials=100,
                                              measure_performance=True, build_dir=build_dir, verbose=False)
        results.append({"seconds": time.time() - s, "correct": bool(getattr(res, "correctness", False)),
                        "runtime_us": getattr(res, "runtime", -1), "ref_runtime_us": getattr(res, "ref_runtime", -1)})
        print(f"kernelbench round {r}: {results[-1]}", flush=True)
    total = time.time() - t0

    # KernelBench's timing of the reference itself (eager a + b), its own way.
    torch.manual_seed(0)
    a = torch.randn(4194304, device="cuda")
    b = torch.randn(4194304, device="cuda")
    times = kb_timing.time_execution_with_cuda_event(lambda x, y: x + y, [a, b], num_trials=100, verbose=False,
                                                     device=torch.device("cuda"))
    stats = kb_timing.get_timing_stats(times, device=torch.device("cuda"))
    out = {"rounds": args.rounds, "seconds": total, "per_minute": 60.0 * args.rounds / total, "results": results,
           "reference_ms": stats}
    print(json.dumps(out), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
