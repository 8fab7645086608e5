#!/usr/bin/env python3
"""Keeps one experiment of tools/gpu/learning_tiers.sh for the CPU's replay (issue 49).

Usage: learning_keep.py LT_DIR EXPERIMENT [DEST]

LT_DIR is the folder learning_tiers.sh wrote (on the GPU machine, brought back); EXPERIMENT one of
its experiments (mechanical-ucb, model-ucb, ...). DEST (default
tests/bench_pipeline/recorded/learning-EXPERIMENT) receives:
  measurements.jsonl  every evaluation the GPU made (what --harness-replay serves), each kind of
                      request of each kernel once: the recorder writes every evaluation it
                      returns, a kernel served again from the evaluator's cache included, and a
                      replay serves the latest of equal fit, which is the one kept
  learning.json, learning.md  the GPU run's report, whose counts the replay must reach
  tier.json           {"model": "answer book"} for the model tier (the replay makes the book again)
  tasks/levelN/NAME/task.json  each imported KernelBench problem's name, shapes and tolerance, its
                      reference (KernelBench's code, which a replay never runs) replaced by a stub
"""
import json
import pathlib
import shutil
import sys

root = pathlib.Path(__file__).resolve().parents[2]
lt, experiment = pathlib.Path(sys.argv[1]), sys.argv[2]
dest = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else root / "tests" / "bench_pipeline" / "recorded" / ("learning-" + experiment)
src = lt / experiment
shutil.rmtree(dest, ignore_errors=True)
dest.mkdir(parents=True)
lines = (src / "measurements.jsonl").read_text().splitlines()
notes, latest = [], {}
for i, line in enumerate(lines):
    j = json.loads(line)
    if "$source" in j:
        notes.append(line)
        continue
    r = j.get("request", {})
    latest[(j["task"], j["hash"], r.get("time", True), r.get("profile", True))] = i
kept = notes + [lines[i] for i in sorted(latest.values())]
(dest / "measurements.jsonl").write_text("\n".join(kept) + "\n")
for name in ("learning.json", "learning.md"):
    shutil.copy(src / "run" / name, dest / name)
if experiment.startswith("model-"):
    (dest / "tier.json").write_text(json.dumps({"model": "answer book",
                                                "book": "tests/bench_pipeline/learning_book/make_book.py"}) + "\n")
context = json.loads((src / "run" / "learning.json").read_text())["context"]
for key in context["train"] + context["test"]:
    task_json = lt / "tasks" / key / "task.json"
    if not task_json.exists():
        continue  # an example task: the repository's own
    task = json.loads(task_json.read_text())
    level, name = key[1], key.split("_", 1)[1]
    stub = {"name": task["name"],
            "description": "A stand-in for replays: KernelBench problem " + name + " as kblaster imported it on the GPU "
                           "for the learning curve (sizes divided by 16 by tools/kernelbench_initial/shrink_problems.py): "
                           "its name, shapes and tolerance. The reference (KernelBench's Model) is not kept here; "
                           "replayed measurements never run it.",
            "reference": {"source": "def forward(x):\n    # replay only: the reference is KernelBench's Model, measured on the GPU\n    return x\n"},
            "inputs": task["inputs"], "tolerance": task["tolerance"], "seeds": task.get("seeds", 3)}
    if "outputs" in task:
        stub["outputs"] = task["outputs"]
    out = dest / "tasks" / ("level" + level) / name
    out.mkdir(parents=True)
    (out / "task.json").write_text(json.dumps(stub, indent=2) + "\n")
print("kept", experiment, "in", dest)
