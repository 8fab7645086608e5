#!/usr/bin/env python3
"""check_gpu.py: runs the initial kernels against their KernelBench problems on a CUDA GPU.

For each selected problem: compiles DIR/levelN/NAME.cu into a shared library (nvcc -shared),
builds the problem's Model and inputs with PyTorch on the GPU, calls kb_forward through ctypes
with the same arguments kblaster-harness passes (inputs, then named_parameters(), then
named_buffers(), float32 contiguous; outputs preallocated), and compares with Model's output
at the harness's float32 tolerance (atol = rtol = 1e-4). Prints one line per problem with the
largest error and the kernel's time (one warm call, CUDA events) beside
the eager Model's.

Usage: check_gpu.py KERNELBENCH_DIR [--kernels DIR] [--include DLPACK_INCLUDE] [--nvcc NVCC]
                    [--shrink N] [NAME_SUBSTRING ...]
--shrink N divides the problem's module-level integer sizes (batch_size, dim, ...) by N before
get_inputs()/get_init_inputs() run (sizes stay >= 1), for a quicker run.
"""
import argparse
import ctypes
import importlib.util
import os
import subprocess
import sys
import tempfile


class dl_device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class dl_data_type(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class dl_tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", dl_device), ("ndim", ctypes.c_int32),
                ("dtype", dl_data_type), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


K_DL_CUDA, K_DL_FLOAT, K_DL_INT = 2, 2, 0
SIZE_NAMES = ("batch_size", "dim", "dim1", "dim2", "features", "in_features", "out_features", "input_size",
              "output_size", "hidden_size", "M", "N", "K")


def to_dl(torch, t, keep):
    shape = (ctypes.c_int64 * max(1, t.dim()))(*t.shape)
    keep.append(shape)
    code = K_DL_FLOAT if t.is_floating_point() else K_DL_INT
    return dl_tensor(ctypes.c_void_p(t.data_ptr()), dl_device(K_DL_CUDA, t.device.index or 0), t.dim(),
                     dl_data_type(code, t.element_size() * 8, 1), shape, None, 0)


def load_problem(path, shrink):
    spec = importlib.util.spec_from_file_location("problem_" + os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if shrink > 1:
        for name in SIZE_NAMES:
            v = getattr(module, name, None)
            if isinstance(v, int) and not isinstance(v, bool) and v > 1:
                setattr(module, name, max(1, v // shrink))
        if hasattr(module, "bias_shape") and hasattr(module, "out_features"):
            module.bias_shape = (module.out_features,)
    return module


def check(torch, args, level, name, workdir):
    problem = os.path.join(args.kernelbench_dir, "KernelBench", "level%d" % level, name + ".py")
    if not os.path.exists(problem):
        problem = os.path.join(args.kernelbench_dir, "level%d" % level, name + ".py")
    source = os.path.join(args.kernels, "level%d" % level, name + ".cu")
    lib = os.path.join(workdir, "L%d_%s.so" % (level, name))
    cmd = [args.nvcc, "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-I", args.include, source, "-o", lib]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return "COMPILE-FAIL " + r.stderr.strip()[:400]
    module = load_problem(problem, args.shrink)
    torch.manual_seed(42)
    with torch.device("cuda"):
        model = module.Model(*module.get_init_inputs()).cuda().eval()
        inputs = [t.cuda().contiguous() for t in module.get_inputs()]
    with torch.no_grad():
        expected = model(*[t.clone() for t in inputs])
    expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
    tensors = inputs + [p.detach().contiguous() for _, p in model.named_parameters()]
    tensors += [b.detach().contiguous() for _, b in model.named_buffers()]
    outputs = [torch.full_like(e, float("nan")) for e in expected]
    keep = []
    ins = (dl_tensor * len(tensors))(*[to_dl(torch, t, keep) for t in tensors])
    outs = (dl_tensor * len(outputs))(*[to_dl(torch, t, keep) for t in outputs])
    fn = ctypes.CDLL(lib).kb_forward
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    status = fn(ins, len(tensors), outs, len(outputs), stream)
    torch.cuda.synchronize()
    if status != 0:
        return "KB_FORWARD-RETURNED %d" % status
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(ins, len(tensors), outs, len(outputs), stream)
    end.record()
    torch.cuda.synchronize()
    kernel_ms = start.elapsed_time(end)
    start.record()
    with torch.no_grad():
        model(*inputs)
    end.record()
    torch.cuda.synchronize()
    eager_ms = start.elapsed_time(end)
    worst = 0.0
    ok = True
    for got, want in zip(outputs, expected):
        ok = ok and got.shape == want.shape and torch.allclose(got, want, atol=1e-4, rtol=1e-4)
        err = float((got.double() - want.double()).abs().max()) if got.shape == want.shape else float("inf")
        worst = err if err != err else max(worst, err)  # a NaN (an unwritten output) must show
    shape = "x".join(str(s) for s in inputs[0].shape)
    return "%s max_abs_err=%.3g kernel_ms=%.3f eager_ms=%.3f input0=%s" % ("OK" if ok else "MISMATCH", worst,
                                                                           kernel_ms, eager_ms, shape)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kernelbench_dir")
    p.add_argument("names", nargs="*", help="substrings of problem names (default: all)")
    p.add_argument("--kernels", default=here)
    p.add_argument("--include", default=os.path.join(here, "..", "..", ".gpu-deps", "include"))
    p.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    p.add_argument("--shrink", type=int, default=1)
    args = p.parse_args()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False  # LibTorch's default, as the harness runs the reference
    failures = 0
    with tempfile.TemporaryDirectory() as workdir:
        for level in (1, 2):
            folder = os.path.join(args.kernels, "level%d" % level)
            for f in sorted(os.listdir(folder), key=lambda s: int(s.split("_")[0])):
                name = f[:-3]
                if not f.endswith(".cu") or (args.names and not any(n.lower() in name.lower() for n in args.names)):
                    continue
                try:
                    line = check(torch, args, level, name, workdir)
                except Exception as e:  # one problem's failure must not hide the others'
                    line = "ERROR %s: %s" % (type(e).__name__, str(e).splitlines()[0][:300] if str(e) else "")
                failures += not line.startswith("OK")
                print("L%d %-40s %s" % (level, name, line), flush=True)
                torch.cuda.empty_cache()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
