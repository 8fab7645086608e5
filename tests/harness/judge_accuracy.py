#!/usr/bin/env python3
"""The judge's accuracy on honest candidates, from harness_check's --json-out log: per timed
reply, the runner's median per call, the judge's own figure (its host clock around each batch,
full batches less half batches per call, or less an empty exchange where there are no half batches), their ratio and the calls a sample. Honest candidates must
read within 10 % (the margin the judge allows a runner, with no absolute slack); the adversarial
ones that forge their timer show where they land. Usage: judge_accuracy.py harness-gpu.json"""
import json
import sys

log = json.load(open(sys.argv[1]))
print("| section | candidate | runner's median (ms) | judge's figure (ms) | judge / runner | calls a sample | verdict |")
print("| --- | --- | --- | --- | --- | --- | --- |")
worst = 0.0
for e in log:
    r = e.get("reply") or {}
    t = r.get("timing")
    if not t or "candidate" not in t:
        continue
    c = t["candidate"]
    runner = c.get("runner_median_ms", c.get("median_ms", 0))
    judge = c.get("judge_ms", 0)
    ratio = judge / runner if runner > 0 else float("nan")
    honest = e["section"] in ("examples", "controls") and r.get("verdict") == "pass"
    if honest and runner >= 0.005 and not c.get("stopped_slower"):
        worst = max(worst, abs(ratio - 1))
    print("| %s | %s | %.4f | %.4f | %.3f | %d | %s %s |" % (e["section"], e["name"], runner, judge, ratio,
                                                           t.get("calls_per_sample", 1), r.get("verdict"), r.get("check", "")))
print("\nworst honest disagreement at 5 us or more: %.1f %%" % (100 * worst))
sys.exit(0 if worst <= 0.10 else 1)
