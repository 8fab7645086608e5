#!/usr/bin/env python3
"""PNG charts of a `kblaster bench` report, for places without a browser (papers, issue notes).

Reads the metrics.json that `kblaster bench` / `kblaster bench report` writes beside report.html
and draws with matplotlib (Debian: python3-matplotlib; headless Agg backend):
  OUT_DIR/fast_p.png        fast_p over the better of eager and torch.compile, every run and level
  OUT_DIR/speedup_hist.png  distribution of the best-baseline speedups
Usage: bench_plot.py METRICS_JSON [--out OUT_DIR]   (default: the folder of METRICS_JSON)
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("metrics")
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("bench_plot.py: matplotlib is missing (%s); on Debian: apt install python3-matplotlib" % e, file=sys.stderr)
        return 3
    try:
        data = json.load(open(a.metrics))
        runs = data["runs"]
    except (OSError, ValueError, KeyError) as e:
        print("bench_plot.py: %s is not a bench metrics.json: %s" % (a.metrics, e), file=sys.stderr)
        return 2
    out = a.out or os.path.dirname(os.path.abspath(a.metrics))
    os.makedirs(out, exist_ok=True)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run in runs:
        m = run["metrics"]
        for g in m["levels"] + [m["overall"]]:
            fp = g["fast_p"]
            ax.plot(fp["p"], [100 * v for v in fp["best"]], label="%s / %s (n=%d)" % (run["name"], g["name"], g["problems"]),
                    linewidth=2.5 if g["level"] == 0 else 1.2)
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("% of problems correct and > p x faster")
    ax.set_title("fast_p over the better of eager and torch.compile")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "fast_p.png"), dpi=150)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    bins = data["histogram_bins"]
    width = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        ax.bar([x + i * width for x in range(len(bins))], run["histogram"], width=width, label=run["name"])
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(bins))])
    ax.set_xticklabels(bins, rotation=30, fontsize=8)
    ax.set_ylabel("problems")
    ax.set_title("Speedup over the better baseline (valid problems)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "speedup_hist.png"), dpi=150)
    print(os.path.join(out, "fast_p.png"))
    print(os.path.join(out, "speedup_hist.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
