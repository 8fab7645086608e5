#!/usr/bin/env python3
"""The learning-curve experiment replayed on the CPU from its GPU recording (issues 38 and 49).

Usage: learning_test.py KBLASTER SOURCE_DIR WORK_DIR [RECORDING]

RECORDING (default learning-mechanical-ucb) is a folder of tests/bench_pipeline/recorded/: one
experiment of tools/gpu/learning_tiers.sh, a tier and a selection policy. It holds what the GPU
measured:
measurements.jsonl (every evaluation, served by --harness-replay), learning.json (the GPU run's
report data: its sets, settings and counts) and tasks/levelN/NAME/task.json (the KernelBench
problems as the GPU imported them: name, shapes, tolerance; their reference, KernelBench's code,
is left out and never run, since every measurement is replayed), and for the model tier
tier.json ({"model": "answer book"}): the stand-in model is the answer book that
learning_book/make_book.py writes from the hand-written rewrites, made again here. The example tasks are the
repository's own. The same experiment runs again here, learning its KB from the replayed
measurements, and every count must come out as on the GPU: each held-out run's attempts, its best
speedup and the attempts it needed to reach 90 % of the task's best, the arms' totals and the
warm / cold ratio, the start KBs' coverage and statistics by architecture. Then: each result's
attempts against its candidate count, a training set that overlaps the held-out one refused with
a clear message, and a second run that resumes with nothing left to do and reports the same.
"""
import json
import math
import os
import shutil
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def selection(keys):
    """Result keys (L1_19_ReLU) as a --problems selection of whole names."""
    return ",".join(k.split("_", 1)[1] for k in keys)


def build_tree(recorded, src, keys, tree):
    for key in keys:
        level, name = key[1], key.split("_", 1)[1]
        dest = os.path.join(tree, "level" + level)
        os.makedirs(dest, exist_ok=True)
        stub = os.path.join(recorded, "tasks", "level" + level, name)
        example = os.path.join(src, "examples", "tasks", name)
        target = stub if os.path.isdir(stub) else example
        if not os.path.isfile(os.path.join(target, "task.json")):
            fail("no task for %s (neither %s nor %s)" % (key, stub, example))
        os.symlink(target, os.path.join(dest, name))


def command(kblaster, src, recorded, gpu, tree, out, train, test, book):
    h = gpu["context"]["hyperparameters"]
    s = gpu["summary"]
    cmd = [kblaster, "bench", tree, "--level", "1", "--level", "2", "--learning-curve", "--train", train,
           "--test", test, "--out", out, "--kernels", os.path.join(src, "tools", "kernelbench_initial"),
           "--harness-replay", os.path.join(recorded, "measurements.jsonl"), "--timing-seconds", "0",
           "--breadth", str(h["breadth"]), "--depth", str(h["depth"]), "--iterations", str(h["iterations"]),
           "--top-k", str(h["top_k"]), "--policy", h["policy"], "--budget-candidates", str(h["budget_candidates"]),
           "--seeds", ",".join(str(x) for x in s["seeds"]), "--train-breadth", str(gpu["context"]["train_breadth"])]
    if gpu["context"]["foreign_arch"]:
        cmd += ["--foreign-arch", gpu["context"]["foreign_arch"]]
    if book:
        cmd += ["--replay", book]
    if not h.get("mechanical_first", True):
        cmd += ["--no-mechanical-first"]
    return cmd


def close(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def compare(gpu, here):
    g, h = gpu["summary"], here["summary"]
    for key in ("arms", "seeds", "budget"):
        if g[key] != h[key]:
            fail("%s: GPU %s, replay %s" % (key, g[key], h[key]))
    if [t["task"] for t in g["tasks"]] != [t["task"] for t in h["tasks"]]:
        fail("tasks differ: %s vs %s" % ([t["task"] for t in g["tasks"]], [t["task"] for t in h["tasks"]]))
    for gt, ht in zip(g["tasks"], h["tasks"]):
        for key in ("best", "target", "informative", "complete"):
            if not close(gt[key], ht[key]):
                fail("%s %s: GPU %s, replay %s" % (gt["task"], key, gt[key], ht[key]))
        if len(gt["runs"]) != len(ht["runs"]):
            fail("%s: %d runs on the GPU, %d replayed" % (gt["task"], len(gt["runs"]), len(ht["runs"])))
        for gr, hr in zip(gt["runs"], ht["runs"]):
            for key in ("arm", "seed", "attempts", "best", "to_target", "counted"):
                if not close(gr[key], hr[key]):
                    fail("%s %s s%s %s: GPU %s, replay %s" % (gt["task"], gr["arm"], gr["seed"], key, gr[key], hr[key]))
    for ga, ha in zip(g["totals"], h["totals"]):
        for key in ("arm", "runs", "reached", "mean_attempts", "median_attempts"):
            if not close(ga[key], ha[key]):
                fail("total %s %s: GPU %s, replay %s" % (ga["arm"], key, ga[key], ha[key]))
    for key in ("warm_over_cold", "seed_over_cold"):
        if not close(g.get(key), h.get(key)):
            fail("%s: GPU %s, replay %s" % (key, g.get(key), h.get(key)))
    if g["coverage"] != h["coverage"]:
        fail("coverage: GPU %s, replay %s" % (g["coverage"], h["coverage"]))
    for key in ("start_rows", "added_rows"):
        if gpu["context"][key] != here["context"][key]:
            fail("%s: GPU %s, replay %s" % (key, gpu["context"][key], here["context"][key]))


def check_results(out):
    """Each stored result: its attempts are its candidates after the input."""
    n = 0
    for arm in sorted(os.listdir(out)):
        results = os.path.join(out, arm, "results")
        if not os.path.isdir(results):
            continue
        for name in sorted(os.listdir(results)):
            r = json.load(open(os.path.join(results, name)))
            if r["status"] != "ok":
                continue
            if len(r["attempts"]) != r["candidates"] - 1:
                fail("%s/%s: %d attempts for %d candidates" % (arm, name, len(r["attempts"]), r["candidates"]))
            n += 1
    if n == 0:
        fail("no result stored")


def main():
    kblaster, src, work = sys.argv[1:4]
    recording = sys.argv[4] if len(sys.argv) > 4 else "learning-mechanical-ucb"
    recorded = recording if os.path.isabs(recording) else os.path.join(src, "tests", "bench_pipeline", "recorded", recording)
    gpu = json.load(open(os.path.join(recorded, "learning.json")))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    book = None
    tier = os.path.join(recorded, "tier.json")
    if os.path.isfile(tier) and json.load(open(tier)).get("model") == "answer book":
        book = os.path.join(work, "book.jsonl")
        maker = os.path.join(src, "tests", "bench_pipeline", "learning_book", "make_book.py")
        with open(book, "w") as f:
            r = subprocess.run([sys.executable, maker], stdout=f, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            fail("make_book.py failed: " + r.stderr[-2000:])
    tree, out = os.path.join(work, "tree"), os.path.join(work, "run")
    ctx = gpu["context"]
    build_tree(recorded, src, ctx["train"] + ctx["test"], tree)
    train, test = selection(ctx["train"]), selection(ctx["test"])
    cmd = command(kblaster, src, recorded, gpu, tree, out, train, test, book)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("the replayed experiment failed (%d):\n%s\n%s" % (r.returncode, r.stdout, r.stderr[-4000:]))
    here = json.load(open(os.path.join(out, "learning.json")))
    compare(gpu, here)
    check_results(out)
    if not os.path.isfile(os.path.join(out, "learning.md")):
        fail("no learning.md")

    # The same command again: nothing left to run, the same counts.
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or "starting" in r.stderr:
        fail("the second run did not just resume (%d):\n%s" % (r.returncode, r.stderr[-2000:]))
    compare(gpu, json.load(open(os.path.join(out, "learning.json"))))

    # A held-out set that overlaps the training set is refused, naming the problem.
    bad = command(kblaster, src, recorded, gpu, tree, os.path.join(work, "bad"), train, test + "," + train.split(",")[0], book)
    r = subprocess.run(bad, capture_output=True, text=True)
    if r.returncode != 2 or "must not share" not in r.stderr or ctx["train"][0] not in r.stderr:
        fail("an overlapping held-out set was not refused clearly (%d): %s" % (r.returncode, r.stderr[-1000:]))
    print("bench_pipeline.learning (%s): passed (%d held-out tasks, warm / cold %s, seed / cold %s)"
          % (recording, len(gpu["summary"]["tasks"]), here["summary"]["warm_over_cold"], here["summary"].get("seed_over_cold")))


if __name__ == "__main__":
    main()
