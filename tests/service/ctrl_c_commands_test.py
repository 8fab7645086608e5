#!/usr/bin/env python3
"""service.ctrl_c_commands: `kblaster eval`, `kblaster profile` and `kblaster import` stopped with
Ctrl-C (SIGINT to the command alone, as service.ctrl_c sends it to `kblaster optimize`) while a
child of theirs works: the harness judging a candidate, nvcc building a source for its static
profile, the PyTorch exporter. Each must end saying it was interrupted, with the shell's status
for it (130); no process it started may be left, read from /proc (this test is the children's
subreaper, so a child its command leaves behind is still found below it); and it leaves no
output of its own: no task folder from an import stopped midway.

usage: ctrl_c_commands_test.py KBLASTER KBLASTER_HARNESS ROOT"""
import ctypes
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from process_tree import descendants  # noqa: E402

kblaster, harness, root = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
failures = []
PR_SET_CHILD_SUBREAPER = 36


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def names_of(pids):
    out = []
    for p in pids:
        try:
            out.append(pathlib.Path(f"/proc/{p}/comm").read_text().strip())
        except OSError:
            pass
    return out


def interrupt_when(name, cmd, env, what):
    """Runs `cmd`, sends SIGINT once a descendant whose name contains `name` runs, and checks the
    command's end; returns its stdout and stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        until, seen = time.time() + 120, False
        while time.time() < until and not seen and proc.poll() is None:
            seen = any(name in n for n in names_of(descendants(proc.pid, live_only=True)))
            if not seen:
                time.sleep(0.01)
        check(seen, f"{what}: {name} started")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        check(proc.returncode == 130 and "interrupted" in err,
              f"{what}: ends saying it was interrupted (rc {proc.returncode}: {err.strip()[-300:]})")
        # Whatever the command left is reparented to this process, its subreaper.
        stopped = time.time()
        while time.time() < stopped + 1 and descendants(os.getpid(), live_only=True):
            time.sleep(0.01)
        left = descendants(os.getpid(), live_only=True)
        check(not left, f"{what}: no child left a second after it ended ({names_of(left)})")
        return out, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in descendants(os.getpid()):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


if not os.path.exists(harness):
    print("skipped: kblaster-harness is not built (LibTorch not found)")
    sys.exit(77)
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    print("skipped: cannot become the children's subreaper")
    sys.exit(77)

tmp = pathlib.Path(tempfile.mkdtemp(prefix="kblaster-ctrl-c-commands-"))
env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), KBLASTER_HARNESS=harness)

# eval: the harness judging vector_add's host kernel on the CPU.
shutil.copytree(root / "examples/tasks/vector_add", tmp / "vector_add")
interrupt_when("kblaster-harn", [kblaster, "eval", str(tmp / "vector_add"), "--device", "cpu", "--harness", harness], env, "eval")

# profile --static: nvcc building a source no cache has seen (its text is this run's own).
source = tmp / "scale.cu"
source.write_text(f"// {tmp.name}\n__global__ void scale(float* x, float a, int n) {{\n"
                  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= a;\n}\n")
if shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    interrupt_when("nvcc", [kblaster, "profile", "--static", str(source)], env, "profile --static")
else:
    print("note: no nvcc here: profile --static not checked")

# import kernelbench: the exporter (PyTorch) killed midway leaves no task folder.
python = next((p for p in ("python3", "/usr/bin/python3")
               if subprocess.run([p, "-c", "import torch"], capture_output=True).returncode == 0), None)
if python:
    out_dir = tmp / "imported" / "softmax"
    interrupt_when("python", [kblaster, "import", "kernelbench", str(root / "tests/fixtures/kernelbench/softmax.py"),
                              "--out", str(out_dir), "--python", python, "--harness", harness], env, "import")
    check(not (tmp / "imported").exists(), "import: no task folder left (nor the folder made for it)")
else:
    print("note: no python3 with PyTorch here: import not checked")

shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
