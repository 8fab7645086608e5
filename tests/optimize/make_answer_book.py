#!/usr/bin/env python3
"""Writes answer_book.jsonl: the stand-in model for the loop's tests (no LLM can run in CI or on
the GPU machine). Lowering answers are hand-written optimized kernels from answers/; an answer is
chosen by what the request contains (a task's first source line, a technique, a repair message),
so the replay is the same whatever order parallel trajectories ask in. First match wins.

Usage: make_answer_book.py [GRADIENT_JSON] > answer_book.jsonl
GRADIENT_JSON optionally holds textual-gradient answers ({"textual_gradient": [{match, answer}]}, each
answer the evaluation, explanations and update of one request) written after a recorded GPU run,
when the attempts they must cite are known."""
import json
import pathlib
import sys

here = pathlib.Path(__file__).resolve().parent
answers = here / "answers"
markers = {  # the first line every version of the task's kernel keeps
    "vector_add": "// vector_add: c = a + b",
    "row_softmax": "// row_softmax: one thread per row",
    "sum_reduction": "// sum_reduction: each block sums its slice",
    # A kernel captured from a program (tests/capture/programs/row_normalize.cu): the answer is
    # the candidate file the model is shown, the program's code above kblaster's launcher, with
    # the kernel rewritten and the launcher kept as generated from the capture recorded in
    # tests/optimize/recordings/captures.
    "row_normalize": "// row_normalize: each thread normalizes one element",
    # The four programs tests/capture/gpu_capture_test.sh captures, at the sizes it runs them
    # with (stencil2d 1000 1000 3, launch 1; histogram 1000000; row_reduce 2048 1000; transpose
    # 1000 700): each answer keeps the launcher generated for that launch, its grid and block
    # changed where the rewrite needs another shape (stencil2d, row_reduce).
    "stencil2d": "// A 5-point Jacobi step over an nx x ny grid, run for a few sweeps (kblaster capture test program).",
    "histogram": "// A 256-bin histogram of bytes with global atomics (kblaster capture test program).",
    "row_reduce": "// Row sums of a rows x cols matrix, one block per row, a shared-memory tree (kblaster capture test program).",
    "transpose": "// A tiled matrix transpose through shared memory (kblaster capture test program).",
    # The model session of issue 36 (tests/optimize/programs/spmv_csr.cu, run as `12288`): the
    # answer keeps the launcher generated from its capture, with a warp per row (rows / 8 blocks).
    "spmv_csr": "// spmv_csr: y = A x for a sparse matrix in CSR form, one thread per row (kblaster model-session test program).",
}


def entry(role, match, text, reuse=True):
    return {"role": role, "match": match, "reuse": reuse,
            "response": {"text": text, "finish_reason": "stop", "model": "answer-book"},
            "usage": {"prompt_tokens": 1800, "completion_tokens": max(1, len(text) // 4), "estimated": True}}


def kernel_answer(path, why):
    return why + "\n```cuda\n" + path.read_text() + "```\n"


lines = [{"$source": "Hand-written answer book for KernelBlaster's loop tests (tests/optimize/make_answer_book.py); "
                     "no model wrote these answers. Kernels in tests/optimize/answers/."}]
for task, marker in markers.items():
    good = kernel_answer(answers / f"{task}.cu", "Rewrote the kernel for the requested technique.")
    lines.append(entry("lowering", [marker, "does not compile"], "Fixed the compile error.\n" + good))
    lines.append(entry("lowering", [marker, "failed verification"], "Fixed the mismatch.\n" + good))
    broken = answers / f"{task}.broken.cu"
    if broken.exists():
        lines.append(entry("lowering", [marker, "vectorized_memory_access"],
                           kernel_answer(broken, "Vectorized the loads with float4.")))
    lines.append(entry("lowering", [marker], good))
lines.append(entry("soft_verifier", [], json.dumps(
    {"verdict": "pass", "issues": [], "summary": "Same computation on every element, no shortcuts."})))
extra = json.loads(pathlib.Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else {}
for e in extra.get("textual_gradient", []):
    lines.append(entry("textual_gradient", e["match"], json.dumps(e["answer"]), e.get("reuse", False)))
lines.append(entry("textual_gradient", [], json.dumps(
    {"evaluation": {"summary": "Outcomes were within the predictions' spread; no departures to learn from.", "departures": []},
     "explanations": [], "update": {"rationale": "Nothing departed from its prediction.", "operations": []}})))
for l in lines:
    print(json.dumps(l))
