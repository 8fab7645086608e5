#!/usr/bin/env python3
"""The MAIC-RL loop in CI, on GPU results recorded on the GPU machine (recordings/, made by
gpu_loop_test.sh) and the answer book as the model (no LLM exists in CI). For each recorded task
the whole loop runs, then the KB is inspected: attempts, statistics, transitions and update-log
entries (numeric, and textual-gradient where the answer book has departures to cite). Then a run
is killed with SIGKILL midway and resumed, and its KB must equal an uninterrupted run's.

usage: loop_replay_test.py KBLASTER"""
import json
import pathlib
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from kb_snapshot import kb_content

here = pathlib.Path(__file__).resolve().parent
root = here.parents[1]
kblaster = sys.argv[1]
book = here / "answer_book.jsonl"
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def command(task, kb, out, *extra):
    return [kblaster, "optimize", str(root / "examples/tasks" / task), "--replay", str(book), "--harness-replay",
            str(here / "recordings" / f"loop-{task}.jsonl"), "--kb", str(kb), "--out", str(out), "--breadth", "2",
            "--depth", "2", "--iterations", "2", "--seed", "1", *extra]


tmp = pathlib.Path(tempfile.mkdtemp(prefix="kblaster-loop-"))
whole = {}
for task in ("vector_add", "row_softmax", "sum_reduction"):
    kb, out = tmp / f"{task}.sqlite", tmp / task
    p = subprocess.run(command(task, kb, out, "--json"), capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"{task}: kblaster optimize exits 0 ({p.stderr.strip()[-300:]})")
    if p.returncode != 0:
        continue
    rep = json.loads(p.stdout)
    whole[task] = kb
    check(rep["replayed"] and "replay of" in rep["evaluator"], f"{task}: the report says the GPU results are a replay")
    check(rep["stop_reason"] == "finished", f"{task}: finished")
    # The best speedup is the one measured on the GPU for that very source.
    rec = {}
    for line in (here / "recordings" / f"loop-{task}.jsonl").read_text().splitlines():
        j = json.loads(line)
        if "hash" in j:
            rec[j["hash"]] = j["evaluation"]
    best, inp = rec[rep["best"]["hash"]], rec[rep["input"]["hash"]]
    check(abs(rep["best"]["speedup_over_input"] - inp["runtime_ms"] / best["runtime_ms"]) < 1e-9,
          f"{task}: best speedup {rep['best']['speedup_over_input']:.2f}x = recorded {inp['runtime_ms']:.4f} ms / "
          f"{best['runtime_ms']:.4f} ms")
    check(rep["best"]["speedup_over_input"] > 1.05, f"{task}: the loop found a faster kernel")
    check((out / "best.diff").read_text().startswith("--- a/kernel.cu"), f"{task}: best.diff is a unified diff")
    con = sqlite3.connect(kb)
    n_attempts = con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
    check(n_attempts == rep["totals"]["attempts"] and n_attempts > 0,
          f"{task}: {n_attempts} attempts in the KB, as the report says")
    check(con.execute("SELECT COUNT(*) FROM attempts WHERE trajectory NOT LIKE ?", (rep["run_id"] + "/i%",)).fetchone()[0] == 0,
          f"{task}: every attempt names its run, iteration and trajectory")
    stat_total = con.execute("SELECT SUM(attempts) FROM opt_stats WHERE arch = 'all'").fetchone()[0]
    check(stat_total == n_attempts, f"{task}: statistics count every attempt ({stat_total})")
    arch_total = con.execute("SELECT SUM(attempts) FROM opt_stats WHERE arch = 'sm_90'").fetchone()[0]
    check(arch_total == n_attempts, f"{task}: per-architecture statistics (sm_90) too")
    # A transition for every correct attempt whose state after was measured: the loop profiles the
    # versions a step starts from, so a trajectory's last new best has none.
    measured_after = con.execute("SELECT COUNT(*) FROM attempts WHERE correct AND state_after_id IS NOT NULL").fetchone()[0]
    learnt = con.execute("SELECT COALESCE(SUM(count), 0) FROM transitions").fetchone()[0]
    check(learnt == measured_after, f"{task}: transitions between states learnt from every state after measured ({learnt})")
    numeric = con.execute("SELECT COUNT(*) FROM updates WHERE cause = 'numeric'").fetchone()[0]
    check(numeric == n_attempts, f"{task}: one numeric update per attempt in the log ({numeric})")
    tg = con.execute("SELECT COUNT(*) FROM updates WHERE cause = 'textual_gradient'").fetchone()[0]
    gradients = [it.get("gradient", {}) for it in rep["iterations"]]
    check(len(gradients) == 2 and all(g.get("status") == "ok" for g in gradients),
          f"{task}: the textual gradient ran after both iterations")
    if task == "vector_add":
        check(tg >= 1, f"{task}: the textual gradient edited the KB ({tg} update-log entries)")
        lessons = con.execute("SELECT COUNT(*) FROM lessons").fetchone()[0]
        check(lessons >= 1, f"{task}: its lesson is in the KB")
    con.close()

# Kill midway (SIGKILL, no chance to clean up), resume, compare with the uninterrupted run.
if "vector_add" in whole:
    kb, out = tmp / "killed.sqlite", tmp / "killed"
    proc = subprocess.Popen(command("vector_add", kb, out, "--replay-pace", "0.05", "--quiet"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = out / "steps.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        # The first step evaluates; the answer book gives every later step of vector_add the same
        # kernel, so they are evaluation-cache hits and follow within milliseconds: kill at once.
        if journal.exists() and len(journal.read_text().splitlines()) >= 1:
            break
        time.sleep(0.002)
    still_running = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(journal.read_text().splitlines()) if journal.exists() else 0
    check(still_running and 0 < done < 8, f"killed with SIGKILL after {done} of 8 steps")
    p = subprocess.run(command("vector_add", kb, out, "--quiet"), capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"the resumed run finishes ({p.stderr.strip()[-300:]})")
    a, b = kb_content(whole["vector_add"]), kb_content(kb)
    for table in a:
        check(a[table] == b[table], f"after kill and resume, KB table {table} equals the uninterrupted run's "
                                    f"({len(b[table])} rows)")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
