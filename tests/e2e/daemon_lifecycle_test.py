#!/usr/bin/env python3
"""The daemon's life as real clients start and end it (ctest e2e.daemon_lifecycle).

1. Started the way vscode-languageclient starts it (`serve --stdio --clientProcessId=PID`), it
   answers initialize, and exits on its own within seconds when that client process dies.
2. `shutdown` + `exit` while nvcc is compiling an opened file ends the process at once: the
   running nvcc is killed, not waited for, and nothing the daemon started is left running.
3. Two daemons on the same project (two editor windows, or two tests run in parallel by ctest)
   analyse the same files at the same time: neither sees a compiler error caused by the other
   (a shared scratch folder that one of them removed under the other's nvcc).

Usage: daemon_lifecycle_test.py --binary build/cli/kblaster
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from process_tree import descendants  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []


def check(ok, what, seen=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not seen else f": {seen}"), flush=True)
    if not ok:
        failures.append(what)
    return ok


class Client:
    """A minimal LSP client over the daemon's stdin/stdout (Content-Length framing)."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, start_new_session=True)
        self.messages = []
        self.cond = threading.Condition()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = json.loads(out.read(length))
            with self.cond:
                self.messages.append(body)
                self.cond.notify_all()

    def send(self, message):
        data = json.dumps(message).encode()
        try:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def request(self, method, params, timeout=60):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait_for(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_for(self, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for m in self.messages:
                    if predicate(m):
                        return m
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)

    def initialize(self, workspace, settings):
        reply = self.request("initialize", {"processId": os.getpid(), "rootUri": "file://" + workspace,
                                            "capabilities": {}, "initializationOptions": settings})
        self.notify("initialized", {})
        return reply


def command_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def daemon_env(workspace):
    env = dict(os.environ)
    env["XDG_STATE_HOME"] = os.path.join(workspace, "state")
    env["XDG_CACHE_HOME"] = os.path.join(workspace, "cache")  # nvcc's build cache: cold
    return env


def settings(workspace):
    return {"knowledgeBase": os.path.join(workspace, "kb.sqlite"), "analysis": {"debounceMs": 0},
            "ncuPath": "/nonexistent/ncu"}


def test_client_process_id(binary, workspace):
    # Its output goes nowhere: left behind by a failure before the kill below, it must not hold
    # the test's output open (ctest would wait for it until the test's timeout).
    editor = subprocess.Popen(["sleep", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    c = Client([binary, "serve", "--stdio", f"--clientProcessId={editor.pid}"], env=daemon_env(workspace))
    reply = c.initialize(workspace, settings(workspace))
    check(reply is not None and "result" in reply, "serve --stdio --clientProcessId=PID answers initialize",
          str(reply))
    check(c.proc.poll() is None, "the daemon runs while its client lives")
    editor.kill()
    editor.wait()
    started = time.monotonic()
    try:
        code = c.proc.wait(timeout=10)
        took = time.monotonic() - started
        # The watch polls about twice a second; the bound leaves room for a loaded CI machine.
        check(took < 5, f"the daemon exits when its client process dies ({took:.2f} s, code {code})")
        check(code == 1, "exit without shutdown is code 1", str(code))
    except subprocess.TimeoutExpired:
        check(False, "the daemon exits when its client process dies", "still running after 10 s")
        c.proc.kill()


def test_exit_stops_children(binary, workspace, nvcc_available):
    if not nvcc_available:
        check(False, "exit while nvcc runs", "nvcc not found: run scripts/install-deps (CUDA at /usr/local/cuda)")
        return
    c = Client([binary, "serve", "--stdio"], env=daemon_env(workspace))
    c.initialize(workspace, settings(workspace))
    source = os.path.join(workspace, "exit_matmul.cu")
    with open(os.path.join(ROOT, "examples", "matmul", "matmul.cu")) as f:
        text = f.read() + f"\n// {time.time_ns()}\n"  # a text no cache has seen
    with open(source, "w") as f:
        f.write(text)
    c.notify("textDocument/didOpen", {"textDocument": {"uri": "file://" + source, "languageId": "cuda-cpp",
                                                       "version": 1, "text": text}})
    compiling = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not compiling:
        compiling = [p for p in descendants(c.proc.pid) if "nvcc" in command_of(p) or "cicc" in command_of(p)]
        time.sleep(0.02)
    if not check(bool(compiling), "the opened file is being compiled (nvcc below the daemon)"):
        c.proc.kill()
        return
    below = descendants(c.proc.pid)
    reply = c.request("shutdown", None, timeout=10)
    check(reply is not None and reply.get("result", 1) is None, "shutdown answers null", str(reply))
    started = time.monotonic()
    c.notify("exit", None)
    try:
        code = c.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        code = None
        c.proc.kill()
    took = time.monotonic() - started
    check(code == 0, "shutdown then exit: code 0", str(code))
    # A cold nvcc of matmul takes several seconds here; an exit that waited for it would be
    # slower than this bound, which still leaves room for a loaded CI machine.
    check(took < 3, f"exit with nvcc in flight ends the process at once ({took:.2f} s)")
    time.sleep(0.2)
    left = [p for p in below if alive(p)]
    check(not left, "nothing the daemon started outlives it", ", ".join(f"{p} {command_of(p)}" for p in left))


def test_two_daemons_one_project(binary, workspace, nvcc_available):
    if not nvcc_available:
        check(False, "two daemons on one project", "nvcc not found")
        return
    # The smallest example: each round is two nvcc runs at once, and ctest runs heavier tests
    # beside this one.
    with open(os.path.join(ROOT, "examples", "vadd", "vadd.cu")) as f:
        base = f.read()
    source = os.path.join(workspace, "shared_vadd.cu")
    uri = "file://" + source
    with open(source, "w") as f:
        f.write(base)
    clients = [Client([binary, "serve", "--stdio"], env=daemon_env(os.path.join(workspace, f"d{i}"))) for i in range(2)]
    for i, c in enumerate(clients):
        os.makedirs(os.path.join(workspace, f"d{i}"), exist_ok=True)
        c.initialize(workspace, settings(os.path.join(workspace, f"d{i}")))
        c.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "cuda-cpp", "version": 1,
                                                           "text": base}})
    bad = []
    rounds = 3
    for r in range(rounds):
        # The same edit in both windows at once: the same text, analysed twice concurrently.
        text = base + f"\n// round {r} {time.time_ns()}\n"
        for c in clients:
            c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": r + 2},
                                                "contentChanges": [{"text": text}]})
            c.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        for i, c in enumerate(clients):
            m = c.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                           and m["params"].get("version") == r + 2, 180)
            if m is None:
                bad.append(f"daemon {i} round {r}: no diagnostics within 180 s")
                continue
            for d in m["params"]["diagnostics"]:
                if d.get("severity") == 1:
                    bad.append(f"daemon {i} round {r}: {d.get('message', '')[:200]}")
    check(not bad, f"two daemons analysing one file {rounds} times at once: no errors", "; ".join(bad))
    for c in clients:
        c.request("shutdown", None, timeout=10)
        c.notify("exit", None)
        try:
            c.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            c.proc.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    nvcc = shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and "/usr/local/cuda/bin/nvcc")
    workspace = tempfile.mkdtemp(prefix="kblaster-lifecycle-")
    try:
        test_client_process_id(args.binary, workspace)
        test_exit_stops_children(args.binary, workspace, bool(nvcc))
        test_two_daemons_one_project(args.binary, workspace, bool(nvcc))
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
