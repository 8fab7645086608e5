#!/usr/bin/env python3
"""A model session on a captured program, end to end in CI (issue 36 item 5): `kblaster optimize
spmv_csr.cu --kernel spmv_csr --apply -- 12288` on a copy of tests/optimize/programs/spmv_csr.cu,
a CSR SpMV written for this test (one thread per row).

Nothing here runs on a GPU and no model is called; both are replays of a session recorded on the
GPU machine (an H100, see tests/optimize/programs/README.md):
  - the capture of the program's launch and the re-capture of the edited program:
    tests/optimize/recordings/captures/spmv_csr-spmv_csr-* (KBLASTER_CAPTURE_RECORD there,
    KBLASTER_CAPTURE_REPLAY here: nothing is built or run);
  - the harness's verdicts, timings and ncu profiles of every candidate:
    tests/optimize/recordings/loop-spmv_csr.jsonl (--harness-record there, --harness-replay here);
  - the model: the answer book tests/optimize/answer_book.jsonl, whose spmv_csr answer
    (tests/optimize/answers/spmv_csr.cu, a warp per row) was written by hand for this session.
What runs for real is everything else: the capture's task and launcher, the loop, the KB (SQLite)
and its states, matched here from the recorded profiles by the current classifier's evidence,
the carry-back of the rewrite into the program, the launch carried to its call site, the
comparison of the re-capture's outputs with the verified ones, and --apply.

usage: program_session_test.py KBLASTER"""
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile

here = pathlib.Path(__file__).resolve().parent
kblaster = sys.argv[1]
book = here / "answer_book.jsonl"
recording = here / "recordings" / "loop-spmv_csr.jsonl"
captures = here / "recordings" / "captures"
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


tmp = pathlib.Path(tempfile.mkdtemp(prefix="kblaster-program-session-"))
program = tmp / "spmv_csr.cu"
shutil.copy(here / "programs" / "spmv_csr.cu", program)
original = program.read_text()
kb, out = tmp / "kb.sqlite", tmp / "run"
# The options of the recording, which are also the editor's (tests/e2e/optimize_session.js).
cmd = [kblaster, "optimize", str(program), "--kernel", "spmv_csr", "--replay", str(book), "--harness-replay",
       str(recording), "--kb", str(kb), "--out", str(out), "--breadth", "2", "--depth", "2", "--iterations", "2",
       "--top-k", "3", "--seed", "1", "--apply", "--", "12288"]
env = dict(os.environ, KBLASTER_CAPTURE_REPLAY=str(captures), XDG_CACHE_HOME=str(tmp / "cache"))
p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
print(p.stdout)
print(p.stderr[-3000:])
check(p.returncode == 0, f"kblaster optimize exits 0 (exit {p.returncode})")

# The capture: the program's launch, replayed from the recording.
check("captured launch 0 of spmv_csr.cu 12288" in p.stderr and "replayed" in p.stderr,
      "the launch was captured from the program run as `12288`, from the recorded capture")

report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
check(report.get("replayed") is True, "the report says the GPU results are a replay")
check(report.get("stop_reason") == "finished", f"the run finished ({report.get('stop_reason')})")

# Verification against the original: every evaluation the session used was recorded on the GPU,
# where the candidate was compared with the original kernel on the captured memory.
recorded = {}
for line in recording.read_text().splitlines():
    j = json.loads(line)
    if "hash" in j:
        recorded[j["hash"]] = j
best = report.get("best", {})
inp = report.get("input", {})
check(best.get("hash") in recorded and inp.get("hash") in recorded, "the input and the best were measured on the GPU")
if best.get("hash") in recorded and inp.get("hash") in recorded:
    b, i = recorded[best["hash"]]["evaluation"], recorded[inp["hash"]]["evaluation"]
    check(b["correct"] and b["compile_ok"], "the best candidate was verified correct against the original")
    check(abs(best["speedup_over_input"] - i["runtime_ms"] / b["runtime_ms"]) < 1e-9 and best["speedup_over_input"] > 1.05,
          f"best speedup {best.get('speedup_over_input', 0):.2f}x = recorded {i['runtime_ms']:.4f} ms / {b['runtime_ms']:.4f} ms")
best_source = (out / "best.cu").read_text() if (out / "best.cu").exists() else ""
check("__shfl_down_sync" in best_source and "kb_forward" in best_source,
      "the best candidate is the model's warp-per-row rewrite, with the launcher generated from the capture")

# The lowering: a model step produced the rewrite (the mechanical tier runs first).
steps = [json.loads(l) for l in (out / "steps.jsonl").read_text().splitlines()] if (out / "steps.jsonl").exists() else []
llm_steps = [s for s in steps if s.get("tier") == "llm"]
check(any(c.get("evaluation", {}).get("correct") for s in llm_steps for c in s.get("candidates", [])),
      f"a model step's candidate was verified correct ({len(llm_steps)} model steps)")

# The KB update: every attempt recorded, statistics, and the transitions learnt between the states
# the recorded profiles are in (matched here, by this build's matcher).
con = sqlite3.connect(kb)
n_attempts = con.execute("SELECT COUNT(*) FROM attempts").fetchone()[0]
check(n_attempts == report.get("totals", {}).get("attempts") and n_attempts > 0,
      f"{n_attempts} attempts in the KB, as the report says")
check(con.execute("SELECT SUM(attempts) FROM opt_stats WHERE arch = 'all'").fetchone()[0] == n_attempts,
      "the statistics count every attempt")
rows = con.execute(
    "SELECT s1.name, t.name, s2.name, tr.count FROM transitions tr JOIN states s1 ON s1.id = tr.from_state_id "
    "JOIN techniques t ON t.id = tr.technique_id JOIN states s2 ON s2.id = tr.to_state_id").fetchall()
print("transitions:", rows)
check(len(rows) > 0, "transitions between states learnt")
warp = [r for r in rows if r[0] == "undersized_grid_uncoalesced" and r[2] != "undersized_grid_uncoalesced"]
check(warp and all(not r[2].startswith(("undersized_grid", "launch_overhead")) for r in warp),
      "the rewrite leaves the undersized grid: the KB learns a transition out of undersized_grid_uncoalesced to a "
      f"state of a full grid ({warp})")
con.close()

# --apply and the re-capture: the edited program reproduced the verified outputs (its recorded
# re-capture), the launch was carried to the call site, and the file now holds the rewrite.
check("recorded re-capture (replayed: nothing was built or run) has the same outputs" in p.stdout,
      "the edited program's re-capture reproduces the verified outputs")
check("was carried to 1 call site" in p.stdout, "the rewrite's launch (a warp per row) was carried to the call site")
edited = program.read_text()
check(edited != original and "__shfl_down_sync" in edited and "int main(" in edited and "kb_forward" not in edited,
      "--apply wrote the rewrite into the program: main kept, no launcher")
check((out / "spmv_csr.cu.orig").read_text() == original, "the original is kept in --out")
check("spmv_csr<<<(rows + 127) / 128, 128>>>" in original and "spmv_csr<<<(rows + 127) / 128, 128>>>" not in edited
      and "+ 7) / 8" in edited and "dim3(256, 1, 1)>>>" in edited,
      "the call site no longer launches a thread per row, but a warp per row: rows / 8 blocks of 256")

if not failures:
    shutil.rmtree(tmp, ignore_errors=True)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
