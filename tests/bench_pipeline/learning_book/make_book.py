#!/usr/bin/env python3
"""Writes the model stand-in of the learning curve's second tier (issue 49): an answer book that
lowers whichever technique the KB picks, from rewrites written by hand for KernelBlaster.

answers/PROBLEM/TECHNIQUE.cu is PROBLEM's naive kernel rewritten for TECHNIQUE; its first line is
the naive kernel's first line (what identifies the problem in a prompt), its second line says
`// applied: TECHNIQUE`. answers/PROBLEM/T1+T2.cu applies T2 on top of T1's rewrite (a sequence).
An answer is chosen by what the request contains:
  - a sequence: the problem's line, `// applied: T1` in the source shown, and T2 asked for;
  - a single technique: the problem's line and the technique asked for;
  - any other technique of the seed's catalog: the naive kernel with one line added that names the
    technique, so a technique the book has no rewrite for costs an attempt and gains nothing, as
    a model that could not make it pay would;
  - a repair (the candidate failed a check): the conversation still holds the technique asked
    for, so the same rewrite comes back, and a rewrite that is wrong stays wrong.
No model wrote any answer. Usage: make_book.py [--kernels DIR] > book.jsonl
DIR holds the naive kernels: DIR/level1/*.cu, DIR/level2/*.cu (default: tools/kernelbench_initial),
and examples/tasks/NAME/kernel.cu are read for the example tasks."""
import argparse
import json
import pathlib

here = pathlib.Path(__file__).resolve().parent
root = here.parents[2]


def entry(role, match, text, reuse=True):
    return {"role": role, "match": match, "reuse": reuse,
            "response": {"text": text, "finish_reason": "stop", "model": "answer-book"},
            "usage": {"prompt_tokens": 1800, "completion_tokens": max(1, len(text) // 4), "estimated": True}}


def asked(technique):
    # The lowering prompt says "Apply this technique:\n<name> (<category>): ..." (lowering.user.txt).
    return "Apply this technique:\n" + technique + " ("


def naive_kernel(problem, kernels):
    for path in [kernels / "level1" / (problem + ".cu"), kernels / "level2" / (problem + ".cu"),
                 root / "examples" / "tasks" / problem / "kernel.cu"]:
        if path.exists():
            return path.read_text()
    raise SystemExit("make_book.py: no naive kernel for " + problem)


def answer(text, why):
    return why + "\n```cuda\n" + text + ("" if text.endswith("\n") else "\n") + "```\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default=str(root / "tools" / "kernelbench_initial"))
    args = ap.parse_args()
    kernels = pathlib.Path(args.kernels)
    catalog = json.loads((root / "kb" / "seed" / "seed_kb.json").read_text())["$techniques"]
    lines = [{"$source": "Hand-written answer book: the model stand-in of the learning curve's second tier "
                         "(tests/bench_pipeline/learning_book/make_book.py); no model wrote these answers."}]
    for folder in sorted(p for p in (here / "answers").iterdir() if p.is_dir()):
        problem = folder.name
        naive = naive_kernel(problem, kernels)
        marker = naive.splitlines()[0]
        files = sorted(folder.glob("*.cu"))
        for f in files:  # sequences first: they are the more specific match
            if "+" in f.stem:
                first, second = f.stem.split("+", 1)
                lines.append(entry("lowering", [marker, "// applied: " + first, asked(second)],
                                   answer(f.read_text(), "Applied " + second + " on top of " + first + ".")))
        written = set()
        for f in files:
            if "+" not in f.stem:
                written.add(f.stem)
                lines.append(entry("lowering", [marker, asked(f.stem)], answer(f.read_text(), "Applied " + f.stem + ".")))
        for technique in sorted(catalog):
            if technique in written:
                continue
            rest = naive.split("\n", 1)
            unchanged = rest[0] + "\n// applied: " + technique + " (nothing it changes pays here)\n" + (rest[1] if len(rest) > 1 else "")
            lines.append(entry("lowering", [marker, asked(technique)],
                               answer(unchanged, technique + " does not change what limits this kernel; kept it as it is.")))
    lines.append(entry("soft_verifier", [], json.dumps(
        {"verdict": "pass", "issues": [], "summary": "Same computation on every element, no shortcuts."})))
    lines.append(entry("textual_gradient", [], json.dumps(
        {"evaluation": {"summary": "Outcomes were within the predictions' spread; no departures to learn from.", "departures": []},
         "explanations": [], "update": {"rationale": "Nothing departed from its prediction.", "operations": []}})))
    for line in lines:
        print(json.dumps(line))


main()
