#!/usr/bin/env python3
"""A model whose answers arrive later (`--batch files:DIR`), in CI: the loop on vector_add's GPU
results recorded on the H100 (recordings/loop-vector_add.jsonl), its questions answered round by
round by tools/batch/answer_from_book.py from the answer book. The deferred run must reach
exactly what the synchronous run with the same answer book reaches (the best kernel, the
report's totals, the KB), with rounds in between that exit 75 and resume. Along the way: a run
started again before the answers came hands nothing over twice; answers that fail (HTTP 500)
are asked again in the next round; the run folder and the batch folder, moved elsewhere
mid-run, resume there; a request the book cannot answer is refused and counts as the model's
failure, as a synchronous replay's miss does. Then kblaster bench the same way, on the bench
pipeline's KernelBench-format problems.

usage: deferred_test.py KBLASTER"""
import atexit
import json
import os
import pathlib
import signal
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from kb_snapshot import kb_content

here = pathlib.Path(__file__).resolve().parent
root = here.parents[1]
kblaster = sys.argv[1]
book = here / "answer_book.jsonl"
answer = root / "tools" / "batch" / "answer_from_book.py"
failures = []
# Every server this test starts dies with it, however it ends: one left running would hold the
# test's output pipe open and ctest would wait for it until its timeout (the likely cause of CI's
# 900 s timeout on 45c7277: a port file read half written, an exception, the server left behind).
servers = []
atexit.register(lambda: [p.kill() for p in servers if p.poll() is None])


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)  # flushed: a run killed by ctest still shows how far it got
    if not cond:
        failures.append(what)


def run(cmd, timeout, cwd=None):
    """subprocess.run in its own process group: past `timeout` the whole group is killed (a child
    holding the pipes would otherwise keep communicate() waiting) and the run comes back with
    returncode -9 and a line saying so, for the check that reads it to fail with the output so far."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[deferred_test: killed after {timeout} s: {' '.join(map(str, cmd[:2]))}]"
        print(f"TIMEOUT after {timeout} s: {' '.join(map(str, cmd))}\n{err[-2000:]}", flush=True)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def optimize(work, kb, out, *model):
    return run([kblaster, "optimize", str(root / "examples/tasks/vector_add"), "--harness-replay",
                str(here / "recordings" / "loop-vector_add.jsonl"), "--kb", str(kb), "--out", str(out),
                "--breadth", "2", "--depth", "2", "--iterations", "2", "--seed", "1", "--json", *model], timeout=240, cwd=work)


def answer_round(batch, the_book=book, *extra):
    p = run([sys.executable, str(answer), str(the_book), str(batch), *extra], timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def deferred(work, kb, out, batch, the_book=book, fail_first=0, on_round=None, limit=40):
    """Rounds until the run ends: each exits 75 and leaves questions; the script answers them."""
    rounds, p = 0, None
    for rounds in range(1, limit + 1):
        if on_round:
            work, kb, out, batch = on_round(rounds, work, kb, out, batch)
        p = optimize(work, kb, out, "--batch", f"files:{batch}")
        if p.returncode != 75:
            break
        answer_round(work / batch, the_book, *(["--fail-first", str(fail_first)] if fail_first else []))
    return p, rounds, kb, out, work / batch


def same_run(sync, sync_kb, sync_out, p, kb, out, what):
    check(p.returncode == 0, f"{what}: the last round finishes ({p.stderr.strip()[-400:]})")
    if p.returncode != 0:
        return
    a, b = json.loads(sync.stdout), json.loads(p.stdout)
    check(b["stop_reason"] == "finished", f"{what}: stopped: {b['stop_reason']}")
    for k in ("candidates", "attempts", "correct_attempts", "tokens", "gpu_seconds"):
        check(a["totals"][k] == b["totals"][k], f"{what}: totals.{k} {b['totals'][k]} = the synchronous run's {a['totals'][k]}")
    check(a["best"]["hash"] == b["best"]["hash"], f"{what}: the same best kernel ({b['best']['hash'][:12]})")
    check((sync_out / "best.cu").read_text() == (out / "best.cu").read_text(), f"{what}: best.cu is the synchronous run's")
    x, y = kb_content(sync_kb), kb_content(kb)
    for table in x:
        check(x[table] == y[table], f"{what}: KB table {table} equals the synchronous run's ({len(y[table])} rows)")


tmp = pathlib.Path(tempfile.mkdtemp(prefix="kblaster-deferred-"))
sync = optimize(tmp, tmp / "sync.sqlite", tmp / "sync", "--replay", str(book))
check(sync.returncode == 0, f"the synchronous run finishes ({sync.stderr.strip()[-300:]})")

# The plain deferred run, with a restart before the first answers and failures injected.
work = tmp / "deferred"
work.mkdir()
first = optimize(work, work / "kb.sqlite", work / "run", "--batch", "files:batch")
check(first.returncode == 75, f"round 1 exits 75, waiting ({first.returncode})")
check("request(s) written to batch/requests-1.jsonl" in first.stderr, "round 1 hands its questions over in batch/requests-1.jsonl, a relative path as given")
again = optimize(work, work / "kb.sqlite", work / "run", "--batch", "files:batch")
check(again.returncode == 75 and "handed over earlier still unanswered" in again.stderr and
      not (work / "batch" / "requests-2.jsonl").exists(),
      "started again before any answer: nothing is handed over twice (no requests-2.jsonl)")
said = answer_round(work / "batch", book, "--fail-first", "1")
check("1 failed on purpose" in said, f"the first answer is an HTTP 500 ({said})")
p, rounds, kb, out, batch = deferred(work, work / "kb.sqlite", work / "run", pathlib.Path("batch"))
requests = sorted(f for f in batch.glob("requests-*.jsonl") if not f.name.endswith(".results.jsonl"))
ids = [json.loads(l)["custom_id"] for f in requests for l in f.read_text().splitlines() if l.strip()]
check(len(ids) != len(set(ids)), "the request answered with HTTP 500 was asked again in a later round")
check(rounds >= 3, f"{rounds + 1} rounds in all")
same_run(sync, tmp / "sync.sqlite", tmp / "sync", p, kb, out, "deferred")
print(f"  deferred: {len(requests)} batches, {len(ids)} requests, {rounds + 1} rounds", flush=True)


# Moved mid-run: after round 3 the whole working folder (run folder, batch folder, KB) goes elsewhere.
def move_after_three(n, work, kb, out, batch):
    if n != 4:
        return work, kb, out, batch
    moved = work.parent / "moved"
    shutil.move(str(work), str(moved))
    return moved, moved / "kb.sqlite", moved / "run", batch


work = tmp / "relocated"
work.mkdir()
p, rounds, kb, out, batch = deferred(work, work / "kb.sqlite", work / "run", pathlib.Path("batch"), on_round=move_after_three)
check(kb.parent.name == "moved", "the folders were moved after round 3")
same_run(sync, tmp / "sync.sqlite", tmp / "sync", p, kb, out, "moved mid-run")

# --wait: one command polls for the answers and resumes by itself while the script answers.
work = tmp / "waiting"
work.mkdir()
proc = subprocess.Popen([kblaster, "optimize", str(root / "examples/tasks/vector_add"), "--harness-replay",
                         str(here / "recordings" / "loop-vector_add.jsonl"), "--kb", "kb.sqlite", "--out", "run", "--breadth", "2",
                         "--depth", "2", "--iterations", "2", "--seed", "1", "--json", "--batch", "files:batch", "--wait",
                         "--poll-seconds", "0.2"], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        start_new_session=True)
deadline = time.time() + 300
while proc.poll() is None and time.time() < deadline:
    if (work / "batch").exists():
        answer_round(work / "batch")
    time.sleep(0.3)
if proc.poll() is None:
    os.killpg(proc.pid, signal.SIGKILL)
out_text, err_text = proc.communicate()
waited = subprocess.CompletedProcess(proc.args, proc.returncode, out_text, err_text)
check(err_text.count("answers arrived in the batch folder: resuming") >= 2, "--wait resumed by itself, round after round")
same_run(sync, tmp / "sync.sqlite", tmp / "sync", waited, work / "kb.sqlite", work / "run", "--wait")

# A book without the textual gradient's answers: the synchronous replay misses, the deferred run
# is refused (HTTP 400); both count it as the model's failure and reach the same KB.
short = tmp / "short_book.jsonl"
short.write_text("".join(l + "\n" for l in book.read_text().splitlines()
                         if '"role": "textual_gradient"' not in l))
sync_short = optimize(tmp, tmp / "sync_short.sqlite", tmp / "sync_short", "--replay", str(short))
check(sync_short.returncode == 0, "the synchronous run on the short book finishes")
work = tmp / "refused"
work.mkdir()
p, rounds, kb, out, batch = deferred(work, work / "kb.sqlite", work / "run", pathlib.Path("batch"), the_book=short)
refusals = sum('"status_code": 400' in f.read_text() for f in batch.glob("*.results.jsonl"))
check(refusals >= 1, f"the answer script refused what the short book cannot answer ({refusals} file(s))")
same_run(sync_short, tmp / "sync_short.sqlite", tmp / "sync_short", p, kb, out, "refusals")


# The providers' batch interfaces, through loopback servers of our own (batch_server.py) that
# speak them and answer from the same book: the first batch expires unrun and one request fails,
# so both are asked again; a run started again before the batch ended submits nothing new; a
# job still running is cancelled on request.
def serve(protocol, *extra):
    port_file = tmp / f"{protocol}.port"
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, str(here / "batch_server.py"), protocol, str(book), str(port_file), *extra])
    servers.append(proc)
    deadline = time.time() + 60
    while not port_file.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    if not port_file.exists():
        raise RuntimeError(f"batch_server.py {protocol} did not start (exit {proc.poll()})")
    return proc, int(port_file.read_text())


def stats(port):
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/debug/stats", timeout=10).read())


for protocol in ("openai", "anthropic"):
    server, port = serve(protocol, "--fail", "1", "--expire-first", "--polls", "3")
    try:
        work = tmp / protocol
        work.mkdir()
        model = ["--batch", f"{protocol}:batch", "--llm-base-url", f"http://127.0.0.1:{port}/v1", "--llm-model", "test-model"]
        first = optimize(work, work / "kb.sqlite", work / "run", *model)
        check(first.returncode == 75 and "submitted as batch" in first.stderr and stats(port)["batches"] == 1,
              f"{protocol}: round 1 submits one batch and exits 75 ({first.returncode})")
        again = optimize(work, work / "kb.sqlite", work / "run", *model)
        check(again.returncode == 75 and stats(port)["batches"] == 1 and "handed over earlier still unanswered" in again.stderr,
              f"{protocol}: started again while the batch runs: nothing is submitted twice")
        p = optimize(work, work / "kb.sqlite", work / "run", *model, "--wait", "--poll-seconds", "0.1")
        st = stats(port)
        job = json.loads((work / "batch" / "requests-1.job.json").read_text())
        check(job.get("status") in ("expired", "ended"), f"{protocol}: the first batch ended unrun ({job.get('status')})")
        check(st["requests"] > st["batches"] and st["failed"] == 1,
              f"{protocol}: the expired and the failed requests were asked again ({st['requests']} requests in {st['batches']} batches)")
        same_run(sync, tmp / "sync.sqlite", tmp / "sync", p, work / "kb.sqlite", work / "run", protocol)
        print(f"  {protocol}: {st['batches']} batches, {st['requests']} requests", flush=True)
    finally:
        server.kill()
    # Cancel on request: a job still running is cancelled at the provider.
    server, port = serve(protocol, "--polls", "1000")
    try:
        work = tmp / (protocol + "-cancel")
        work.mkdir()
        model = ["--batch", f"{protocol}:batch", "--llm-base-url", f"http://127.0.0.1:{port}/v1", "--llm-model", "test-model"]
        optimize(work, work / "kb.sqlite", work / "run", *model)
        c = optimize(work, work / "kb.sqlite", work / "run", *model, "--cancel-batches")
        check(c.returncode == 0 and "cancelled 1 batch job(s)" in c.stdout and stats(port)["cancelled"] == 1,
              f"{protocol}: --cancel-batches cancels the running job at the provider ({c.stdout.strip()})")
    finally:
        server.kill()


# kblaster bench on the bench pipeline's KernelBench-format problems (tests/bench_pipeline/,
# naive initial kernels in its kernels/), GPU results recorded on the H100
# (recordings/loop-bench_pipeline.jsonl), the same answer book: synchronously, then deferred
# through the files provider and both loopback servers. Each must store the same results and
# reach the same KB. The book has no answers for these kernels: their lowering requests are
# refused (deferred) or missed (synchronous), a failed attempt either way.
python = next((p for p in ("/usr/bin/python3", sys.executable)
               if subprocess.run([p, "-c", "import torch"], capture_output=True, timeout=300).returncode == 0), None)
bench_dir = root / "tests" / "bench_pipeline"


def bench(work, *model, timeout=240):
    return run([kblaster, "bench", str(bench_dir / "kernelbench"), "--level", "1", "--level", "2", "--problems",
                "1_Scale,2_Add,1_Relu", "--out", "out", "--kernels", str(bench_dir / "kernels"), "--harness-replay",
                str(here / "recordings" / "loop-bench_pipeline.jsonl"), "--breadth", "2", "--depth", "2",
                "--iterations", "1", "--seed", "1", "--import-device", "cpu", "--timing-seconds", "0", "--python",
                str(python), *model], timeout=timeout, cwd=work)


def stored(work):
    keep = ("best_ms", "candidates", "correct_candidates", "input_ms", "speedup", "status", "techniques", "tokens", "valid",
            "states_visited", "gpu_seconds")
    return {f.name: {k: v for k, v in json.loads(f.read_text()).items() if k in keep}
            for f in sorted((work / "out" / "results").glob("*.json"))}


if python is None:
    check(False, "no python3 with torch for the bench import (scripts/install-deps installs python3-torch)")
else:
    work = tmp / "bench-sync"
    work.mkdir()
    sync_bench = bench(work, "--replay", str(book))
    check(sync_bench.returncode == 0 and "3 run (0 not ok)" in sync_bench.stdout,
          f"bench, synchronous: 3 problems run ({sync_bench.stdout.strip()[:120]} {sync_bench.stderr.strip()[-300:]})")
    want_results, want_kb = stored(work), kb_content(work / "out" / "kb.sqlite")

    def same_bench(work, what):
        got = stored(work)
        check(got == want_results, f"bench, {what}: the stored results equal the synchronous run's ({len(got)} problems)")
        y = kb_content(work / "out" / "kb.sqlite")
        for table in want_kb:
            check(want_kb[table] == y[table], f"bench, {what}: KB table {table} equals the synchronous run's ({len(y[table])} rows)")

    work = tmp / "bench-files"
    work.mkdir()
    rounds, b = 0, None
    for rounds in range(1, 40):
        b = bench(work, "--batch", "files:batch")
        if b.returncode != 75:
            break
        check("problem(s) wait for the model" in b.stderr, f"bench, files: round {rounds} says which problems wait")
        answer_round(work / "batch")
    check(b.returncode == 0, f"bench, files: the last of {rounds} rounds finishes ({b.stderr.strip()[-300:]})")
    same_bench(work, "files")
    for protocol in ("openai", "anthropic"):
        server, port = serve(protocol, "--fail", "1", "--expire-first")
        try:
            work = tmp / f"bench-{protocol}"
            work.mkdir()
            config = work / "llm.json"  # bench takes its model from a config file only
            config.write_text(json.dumps({"llm": {"base_url": f"http://127.0.0.1:{port}/v1", "model": "test-model"}}))
            b = bench(work, "--batch", f"{protocol}:batch", "--llm", str(config), "--wait", "--poll-seconds", "0.1")
            check(b.returncode == 0, f"bench, {protocol}: --wait runs to the end ({b.stderr.strip()[-300:]})")
            same_bench(work, protocol)
        finally:
            server.kill()

print(f"{len(failures)} failure(s)")
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(1 if failures else 0)
