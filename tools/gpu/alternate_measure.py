#!/usr/bin/env python3
"""An independent end-to-end re-measure of two builds of one program, written apart from
kblaster's own timing (engine/program/end_to_end) so that it can check the figure kblaster reports.

Runs the original (A) and the optimized (B) program alternately, ABBA BAAB ..., each run timed as a
user's shell would time it (wall clock around the whole process), and prints the median of each,
the median of the per-pair ratios A/B and a distribution-free 95% interval of that median (order
statistics of the ratios, binomial), and whether both printed the same standard output.

usage: alternate_measure.py --a "CMD" --b "CMD" [--pairs 20] [--warmup 1] [--json OUT]
"""
import argparse
import json
import math
import shlex
import statistics
import subprocess
import sys
import time


def timed_run(cmd):
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{shlex.join(cmd)} exited with {done.returncode}")
    return seconds, done.stdout


def median_interval(values, confidence=0.95):
    """The ranks (lo, hi) such that [v[lo], v[hi]] holds the median with `confidence`."""
    v = sorted(values)
    n = len(v)
    best = (0, n - 1)
    for lo in range(n // 2, -1, -1):
        hi = n - 1 - lo
        covered = sum(math.comb(n, k) for k in range(lo + 1, hi + 1)) / 2**n
        if covered >= confidence:
            best = (lo, hi)
            break
    return v[best[0]], v[best[1]]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--a", required=True, help="the original program's command")
    p.add_argument("--b", required=True, help="the optimized program's command")
    p.add_argument("--pairs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--json")
    o = p.parse_args()
    a, b = shlex.split(o.a), shlex.split(o.b)
    for _ in range(o.warmup):
        timed_run(a)
        timed_run(b)
    ta, tb, ratios, outputs = [], [], [], set()
    for i in range(o.pairs):
        order = (a, b) if i % 4 in (0, 3) else (b, a)
        times = {}
        for cmd in order:
            seconds, out = timed_run(cmd)
            times[id(cmd)] = seconds
            outputs.add((cmd is a, out))
        ta.append(times[id(a)])
        tb.append(times[id(b)])
        ratios.append(times[id(a)] / times[id(b)])
    lo, hi = median_interval(ratios)
    same_output = len({out for _, out in outputs}) == 1
    result = {
        "pairs": o.pairs,
        "original_median_s": statistics.median(ta),
        "optimized_median_s": statistics.median(tb),
        "speedup_median": statistics.median(ratios),
        "speedup_interval_95": [lo, hi],
        "same_output": same_output,
    }
    print(f"{o.pairs} alternating pairs: original {result['original_median_s']*1e3:.1f} ms, optimized "
          f"{result['optimized_median_s']*1e3:.1f} ms (medians); end-to-end speedup {result['speedup_median']:.3f}x, "
          f"95% interval [{lo:.3f}, {hi:.3f}]; outputs {'identical' if same_output else 'DIFFER'}")
    if o.json:
        with open(o.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
