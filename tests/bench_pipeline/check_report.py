#!/usr/bin/env python3
"""Checks a bench report built from tests/bench_pipeline's problems and recorded outcomes against
figures computed by hand. Usage: check_report.py RUN_DIR RUN_NAME

By hand (recorded/*.json):
  L1 1_Scale: vs eager 0.12/0.06 = 2.0; vs torch.compile 0.12*(0.08/0.10)/0.06 = 1.6; best 1.6
  L1 2_Add: input_failed; L1 3_Broken: import_failed; L1 4_NoKernel: no_initial_kernel
  L2 1_Relu: vs eager 0.5/0.4 = 1.25; vs torch.compile 0.2/0.4 = 0.5; best 0.5
  level 1: 4 problems, 1 valid (25%); level 2: 1 of 1; all: 2 of 5 (40%)
  all: geomean vs eager sqrt(2*1.25) = 1.58; vs compile and best sqrt(1.6*0.5) = 0.89
  fast_p (best) over all 5: p=0 -> 2/5, p=0.5 -> 1/5 (0.5 is not > 0.5), p=1.5 -> 1/5, p=1.7 -> 0
"""
import json
import math
import os
import sys

run, name = sys.argv[1], sys.argv[2]
failures = []


def check(what, got, want, tol=1e-9):
    ok = (got == want) if isinstance(want, (str, int)) and not isinstance(want, float) else abs(got - want) <= tol
    if not ok:
        failures.append("%s: got %r, want %r" % (what, got, want))


md = open(os.path.join(run, "report.md")).read()
for row in ("| %s | level 1 | 4 | 25.0%% | 2.00x | 1.60x | 1.60x | 25.0%% |" % name,
            "| %s | level 2 | 1 | 100.0%% | 1.25x | 0.50x | 0.50x | 0.0%% |" % name,
            "| %s | all | 5 | 40.0%% | 1.58x | 0.89x | 0.89x | 20.0%% |" % name):
    if row not in md:
        failures.append("report.md lacks the row: " + row)
for status in ("import_failed 1", "input_failed 1", "no_initial_kernel 1", "ok 2"):
    if status not in md:
        failures.append("report.md lacks the status count '%s'" % status)

data = json.load(open(os.path.join(run, "metrics.json")))
r = data["runs"][0]
m = r["metrics"]
allm = m["overall"]
check("problems", allm["problems"], 5)
check("valid", allm["valid"], 2)
check("valid_rate", allm["valid_rate"], 0.4)
check("geomean vs eager", allm["speedup"]["eager"]["geomean"], math.sqrt(2.0 * 1.25))
check("geomean vs best", allm["speedup"]["best"]["geomean"], math.sqrt(1.6 * 0.5))
check("mean vs best", allm["speedup"]["best"]["mean"], (1.6 + 0.5) / 2)
check("max vs eager", allm["speedup"]["eager"]["max"], 2.0)
check("share above 1 (best)", allm["speedup"]["best"]["share_above_1"], 0.5)
p = allm["fast_p"]["p"]
best = allm["fast_p"]["best"]
check("fast_p points", len(p), 41)
for at, want in ((0.0, 0.4), (0.5, 0.2), (1.5, 0.2), (1.7, 0.0), (4.0, 0.0)):
    check("fast_%.1f" % at, best[round(at * 10)], want)
check("gpu seconds", allm["gpu_seconds"], 16.0)
check("block_size_tuning successes", m["techniques"]["block_size_tuning"]["success"], 1)
check("fast_math failures", m["techniques"]["fast_math"]["failure"], 1)
check("memory_bound_dram visits", m["states"]["memory_bound_dram"], 2)
check("histogram total", sum(r["histogram"]), 2)

html = open(os.path.join(run, "report.html")).read()
for needle in ('id="fastp"', 'id="distribution"', 'id="techniques"', 'id="states"', 'id="tokens"', "Chart.js v"):
    if needle not in html:
        failures.append("report.html lacks " + needle)
if "<script src=" in html:
    failures.append("report.html loads a script from elsewhere")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("report of %s matches the hand-computed figures" % run)
