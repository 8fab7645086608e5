#!/usr/bin/env python3
"""service.ctrl_c: `kblaster optimize` stopped with Ctrl-C (SIGINT to the command, as a terminal
sends it) while the harness measures the input on the CPU (Debian's LibTorch, vector_add's host
kernel): every process it started is gone within a second of the stop, read from /proc, and
the same command again resumes and finishes.

usage: ctrl_c_test.py KBLASTER KBLASTER_HARNESS ROOT"""
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


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


if not os.path.exists(harness):
    print("skipped: kblaster-harness is not built (LibTorch not found)")
    sys.exit(77)

tmp = pathlib.Path(tempfile.mkdtemp(prefix="kblaster-ctrl-c-"))
shutil.copytree(root / "examples/tasks/vector_add", tmp / "vector_add")
cmd = [kblaster, "optimize", str(tmp / "vector_add"), "--kernel", str(tmp / "vector_add" / "kernel_cpu.cpp"),
       "--device", "cpu", "--harness", harness, "--no-llm",
       "--breadth", "1", "--depth", "1", "--iterations", "1", "--kb", str(tmp / "kb.sqlite"), "--out", str(tmp / "run")]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
try:
    # What the wait saw is what counts: a short-lived child (the first compiler call) can be gone
    # by the time /proc is read again, and the run is still busy with the next one.
    until, started = time.time() + 120, []
    while time.time() < until and not started and proc.poll() is None:
        started = descendants(proc.pid, live_only=True)
        if not started:
            time.sleep(0.02)
    check(bool(started), f"the run started children ({len(started)})")
    proc.send_signal(signal.SIGINT)
    stopped = time.time()
    while time.time() < stopped + 1 and descendants(proc.pid, live_only=True):
        time.sleep(0.01)
    left = descendants(proc.pid, live_only=True)
    check(not left, f"no child left {time.time() - stopped:.2f} s after Ctrl-C ({left})")
    out, err = proc.communicate(timeout=60)
    check(proc.returncode == 0 and "interrupted" in out,
          f"it ends saying it was interrupted (rc {proc.returncode}: {out.strip()[-200:]} {err.strip()[-300:]})")
finally:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)

again = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900)
check(again.returncode == 0 and "stopped: finished" in again.stdout,
      f"the same command again finishes (rc {again.returncode}: {again.stdout.strip()[-300:]} {again.stderr.strip()[-300:]})")
shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
