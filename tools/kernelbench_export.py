#!/usr/bin/env python3
"""KernelBench problem -> KernelBlaster task: the exporter that `kblaster import kernelbench` runs.

Loads PROBLEM.py (KernelBench's format: `class Model(nn.Module)`, `get_inputs()`,
`get_init_inputs()`) with this machine's PyTorch, instantiates `Model(*get_init_inputs())`, saves
it as a TorchScript module with its weights (torch.jit.script, else torch.jit.trace on
get_inputs()), times it eagerly and under torch.compile, and writes a manifest (JSON) describing
the inputs, the parameters and buffers in the order kblaster-harness passes them, the outputs and
the timings. The engine (engine/task/kernelbench_import.cpp) turns the manifest into task.json.

Errors go to stderr as one line `kblaster-export-error: KIND: message` with exit status 3, so
that the engine can say what went wrong; progress lines go to stderr too.
Usage: kernelbench_export.py PROBLEM.py --out DIR --manifest FILE [--device cpu|cuda]
                             [--timing-seconds S] [--no-timing]
"""
import argparse
import importlib.util
import json
import math
import os
import statistics
import sys
import time
import traceback


class export_error(Exception):
    """A failure the user can act on; `kind` is a short machine-readable tag."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def progress(text):
    print("kernelbench_export: " + text, file=sys.stderr, flush=True)


def import_torch():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise export_error(
            "torch_missing",
            "PyTorch is not installed for %s (%s); on Debian: apt install python3-torch, "
            "elsewhere: pip install torch; or pass --python with an interpreter that has it"
            % (sys.executable, e),
        )
    return sys.modules["torch"]


def load_problem(path):
    """Runs PROBLEM.py as a module and returns it; its own errors are reported with their traceback."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("kernelbench_problem", path)
    if spec is None or spec.loader is None:
        raise export_error("problem_unreadable", "%s cannot be loaded as a Python module" % path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception:
        raise export_error("problem_raised", "%s raised while loading:\n%s" % (path, traceback.format_exc(limit=4)))
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise export_error("not_kernelbench", "%s defines no '%s' (a KernelBench problem has class Model, "
                               "get_inputs() and get_init_inputs())" % (path, name))
    return module


def call_problem(what, fn):
    try:
        return fn()
    except Exception:
        raise export_error("problem_raised", "%s raised:\n%s" % (what, traceback.format_exc(limit=4)))


def dtype_name(torch, dt):
    names = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
             torch.float64: "float64", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
             torch.bool: "bool"}
    if dt not in names:
        raise export_error("unsupported_dtype", "dtype %s is not in the task format" % dt)
    return names[dt]


def nice(v, tolerance):
    """The roundest number within `tolerance` of a fitted `v` (1, then 2, then 3 significant digits),
    so that a sample standard deviation of 1.01 reads as the 1 that get_inputs() meant."""
    if v == 0:
        return 0.0
    for digits in (1, 2, 3):
        r = round(v, digits - 1 - int(math.floor(math.log10(abs(v)))))
        if abs(r - v) <= tolerance:
            return float(r)
    return float(v)


def infer_init(torch, t, name, out_dir, index):
    """The task-format initialisation that reproduces how get_inputs() draws `t`, or a saved copy."""
    spec = {"name": name, "shape": list(t.shape), "dtype": dtype_name(torch, t.dtype)}
    flat = t.detach().flatten().to("cpu")
    n = flat.numel()
    if n > 0 and not t.is_floating_point():
        if t.dtype == torch.bool:
            return dict(spec, init="randint", low=0, high=2) if n >= 64 else save(torch, t, spec, out_dir, index)
        lo, hi = int(flat.min()), int(flat.max())
        if lo == hi == 0:
            return dict(spec, init="zeros")
        if n >= 64:
            return dict(spec, init="randint", low=lo, high=hi + 1)
        return save(torch, t, spec, out_dir, index)
    if n == 0:
        return dict(spec, init="zeros")
    # Statistics on at most about 4M evenly strided elements: KernelBench inputs reach billions.
    x = flat[:: max(1, n // 4_000_000)].double()
    lo, hi, mean, std = float(x.min()), float(x.max()), float(x.mean()), float(x.std()) if n > 1 else 0.0
    if lo == hi:
        if lo in (0.0, 1.0):
            return dict(spec, init="zeros" if lo == 0 else "ones")
        return save(torch, t, spec, out_dir, index)
    if n >= 256:
        # Uniform: the standard deviation of U(a, b) is (b - a) / sqrt(12).
        if abs(std - (hi - lo) / math.sqrt(12)) < 0.05 * (hi - lo) / math.sqrt(12):
            return dict(spec, init="uniform", low=nice(lo, 0.02 * (hi - lo)), high=nice(hi, 0.02 * (hi - lo)))
        # Normal: centred, about 0.4 % of samples beyond 2.65 sigma is not checked; mean and kurtosis are.
        z = (x - mean) / std
        kurtosis = float((z ** 4).mean())
        if abs(mean) < 0.05 * std + 1e-12 and abs(kurtosis - 3) < 0.5:
            return dict(spec, init="randn", scale=nice(std, 0.03 * std))
    return save(torch, t, spec, out_dir, index)


def save(torch, t, spec, out_dir, index):
    """A distribution we cannot name: the tensor itself, the same on every seed (said in the manifest)."""
    file = "input%d.pt" % index
    torch.save(t.detach().to("cpu").contiguous(), os.path.join(out_dir, file))
    spec = dict(spec, file=file)
    spec["note"] = "saved: get_inputs() draws it from a distribution the task format does not name"
    return spec


def to_torchscript(torch, model, inputs):
    """torch.jit.script, else torch.jit.trace on the inputs; returns (module, method, script error)."""
    try:
        return torch.jit.script(model), "script", None
    except Exception as e:
        script_error = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    try:
        with torch.no_grad():
            return torch.jit.trace(model, tuple(inputs), check_trace=False), "trace", script_error
    except Exception:
        raise export_error("not_exportable", "neither torch.jit.script (%s) nor torch.jit.trace works on Model:\n%s"
                           % (script_error, traceback.format_exc(limit=3)))


def flatten(torch, v):
    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (tuple, list)):
        return [t for e in v for t in flatten(torch, e)]
    raise export_error("bad_output", "Model.forward returned %s; it must return tensors" % type(v).__name__)


def time_calls(torch, fn, device, seconds):
    """Median and mean of per-call times (ms) after warm-up; CUDA events and a sync around each call on the GPU."""
    with torch.no_grad():
        for _ in range(3):
            fn()
        if device == "cuda":
            torch.cuda.synchronize()
        samples = []
        deadline = time.perf_counter() + seconds
        while len(samples) < 10 or (time.perf_counter() < deadline and len(samples) < 1000):
            if device == "cuda":
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn()
                samples.append((time.perf_counter() - t0) * 1000)
    return {"status": "measured", "median_ms": statistics.median(samples), "mean_ms": statistics.fmean(samples),
            "min_ms": min(samples), "samples": len(samples),
            "method": "CUDA events per call" if device == "cuda" else "perf_counter per call"}


def compile_timing(torch, model, inputs, device, seconds):
    if not hasattr(torch, "compile"):
        return {"status": "unavailable",
                "reason": "torch.compile needs PyTorch >= 2.0; this is %s" % torch.__version__}
    try:
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        with torch.no_grad():
            compiled(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        r = time_calls(torch, lambda: compiled(*inputs), device, seconds)
        r["compile_seconds"] = compile_s
        return r
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        return {"status": "unavailable", "reason": "torch.compile failed: %s: %s" % (type(e).__name__, first[:300])}


def export(args):
    torch = import_torch()
    if args.device == "cuda" and not torch.cuda.is_available():
        raise export_error("no_cuda", "--device cuda, but this PyTorch (%s) sees no CUDA device" % torch.__version__)
    problem = load_problem(args.problem)
    torch.manual_seed(42)
    init_inputs = call_problem("get_init_inputs()", problem.get_init_inputs)
    model = call_problem("Model(*get_init_inputs())", lambda: problem.Model(*init_inputs))
    if not isinstance(model, torch.nn.Module):
        raise export_error("not_kernelbench", "Model(...) is a %s, not a torch.nn.Module" % type(model).__name__)
    model = model.to(args.device).eval()  # kblaster-harness runs the reference in eval mode
    raw_inputs = call_problem("get_inputs()", problem.get_inputs)
    if not isinstance(raw_inputs, (list, tuple)) or not raw_inputs:
        raise export_error("bad_inputs", "get_inputs() must return a non-empty list of tensors")
    for i, t in enumerate(raw_inputs):
        if not isinstance(t, torch.Tensor):
            raise export_error("bad_inputs", "get_inputs()[%d] is a %s; the task format and the kb_forward ABI take "
                               "tensors only" % (i, type(t).__name__))
    inputs = [t.to(args.device) for t in raw_inputs]
    progress("Model instantiated (%d parameters, %d buffers); exporting to TorchScript"
             % (len(list(model.parameters())), len(list(model.buffers()))))
    with torch.no_grad():
        expected = flatten(torch, model(*[t.clone() for t in inputs]))
    scripted, method, script_error = to_torchscript(torch, model, inputs)
    module_path = os.path.join(args.out, "model.pt")
    scripted.save(module_path)
    # Reload and compare: a trace can silently bake in data-dependent control flow.
    loaded = torch.jit.load(module_path, map_location=args.device)
    loaded.eval()
    with torch.no_grad():
        got = flatten(torch, loaded(*[t.clone() for t in inputs]))
    if len(got) != len(expected) or any(g.shape != e.shape or not torch.allclose(g, e, atol=1e-5, rtol=1e-5, equal_nan=True)
                                        for g, e in zip(got, expected)):
        raise export_error("not_exportable", "the saved TorchScript module (%s) does not reproduce Model's outputs" % method)

    input_specs = [infer_init(torch, t, "in%d" % i, args.out, i) for i, t in enumerate(raw_inputs)]
    # The order kblaster-harness passes them after the inputs: named_parameters(), then named_buffers(),
    # of the module it loads (the reloaded one).
    params = [{"name": n, "kind": "parameter", "shape": list(p.shape), "dtype": dtype_name(torch, p.dtype)}
              for n, p in loaded.named_parameters()]
    params += [{"name": n, "kind": "buffer", "shape": list(b.shape), "dtype": dtype_name(torch, b.dtype)}
               for n, b in loaded.named_buffers()]
    outputs = [{"shape": list(o.shape), "dtype": dtype_name(torch, o.dtype)} for o in expected]

    manifest = {
        "problem": os.path.abspath(args.problem), "module": "model.pt", "torchscript_method": method,
        "inputs": input_specs, "parameters": params, "outputs": outputs,
        "torch_version": torch.__version__, "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
    }
    if script_error:
        manifest["script_error"] = script_error
    if args.no_timing:
        manifest["eager"] = {"status": "skipped", "reason": "--no-timing"}
        manifest["compile"] = {"status": "skipped", "reason": "--no-timing"}
    else:
        progress("timing the eager reference on %s" % args.device)
        manifest["eager"] = time_calls(torch, lambda: model(*inputs), args.device, args.timing_seconds)
        progress("timing torch.compile on %s" % args.device)
        manifest["compile"] = compile_timing(torch, model, inputs, args.device, args.timing_seconds)
    with open(args.manifest, "w") as f:
        json.dump(manifest, f, indent=1)


def main():
    p = argparse.ArgumentParser(description="Export a KernelBench problem for kblaster (see the module docstring).")
    p.add_argument("problem")
    p.add_argument("--out", required=True)
    p.add_argument("--manifest", required=True)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--timing-seconds", type=float, default=1.0)
    p.add_argument("--no-timing", action="store_true")
    args = p.parse_args()
    try:
        os.makedirs(args.out, exist_ok=True)
        export(args)
    except export_error as e:
        print("kblaster-export-error: %s: %s" % (e.kind, e), file=sys.stderr, flush=True)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
