#!/usr/bin/env python3
"""Regenerates tests/fuzz/corpus/ from the project's real fixtures, cut small.

Where each seed comes from: ncu pages from ../shared/fixtures/ncu-h100/ (recorded on an H100),
ptxas output from the same folder, cassettes from tests/fixtures/cassettes/, model answers from
the cassettes and tests/optimize/answers/, recordings from tests/optimize/recordings/, batch
results in the OpenAI Batch and Anthropic Message Batches shapes around the answer book's texts, tasks
from examples/tasks/, the KB from kb/seed/seed_kb.json, LSP sessions from tests/transcript/.
Fixtures are cut (rows, columns, lines) so that the whole corpus stays a few hundred KB: the
fuzzer needs their shape, not their bulk. Run from anywhere: tests/fuzz/make_seeds.py
"""
import csv
import io
import json
import pathlib
import re

root = pathlib.Path(__file__).resolve().parents[2]
shared = root.parent / "shared" / "fixtures" / "ncu-h100"
out = root / "tests" / "fuzz" / "corpus"


def put(target, name, text):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    data = text.encode() if isinstance(text, str) else text
    (d / name).write_bytes(data)


def cut_csv(text, rows, cols):
    """The first `rows` records of a CSV, each cut to `cols` fields, preceding lines kept."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if l.startswith('"')), 0)
    prefix = "".join(lines[:start][:5])
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i, rec in enumerate(csv.reader(io.StringIO("".join(lines[start:])))):
        if i >= rows:
            break
        w.writerow(rec[:cols])
    return prefix + buf.getvalue()


def ncu():
    if not shared.is_dir():
        return
    for f in ["vadd", "spills", "transpose_conflicts", "matmul_naive"]:
        put("fuzz_ncu_csv", f + ".details.csv", cut_csv((shared / (f + ".details.csv")).read_text(), 40, 20))
        put("fuzz_ncu_csv", f + ".raw.csv", cut_csv((shared / (f + ".raw.csv")).read_text(), 4, 60))
    put("fuzz_ncu_csv", "app_sections.csv", cut_csv((shared / "app_sections.details.csv").read_text(), 30, 20))
    put("fuzz_ncu_source", "cuda.csv", cut_csv((shared / "matmul_naive.source_cuda.csv").read_text(), 40, 40))
    put("fuzz_ncu_source", "sass.csv", cut_csv((shared / "matmul_naive.source_sass.csv").read_text(), 25, 40))
    for f in ["ptxas_sm80.txt", "ptxas_sm90.txt"]:
        put("fuzz_ptxas", f, (shared / f).read_text()[:4000])
    for f in ["spills.log", "vadd.log", "err_missing_binary.txt"]:
        put("fuzz_nvcc_diagnostics", f, (shared / f).read_text()[:3000])


def diagnostics():
    put("fuzz_nvcc_diagnostics", "front_end.txt",
        'kernel.cu(12): error: identifier "blockIdx_x" is undefined\n'
        "      int i = blockIdx_x * blockDim.x + threadIdx.x;\n"
        "              ^\n\n"
        'kernel.cu(20): warning #177-D: variable "unused" was declared but never referenced\n'
        "      int unused;\n          ^\n\n"
        "1 error detected in the compilation of \"kernel.cu\".\n")
    put("fuzz_nvcc_diagnostics", "ptxas.txt",
        "ptxas error   : Entry function '_Z4vaddPKfS0_Pfi' uses too much shared data (0x10000 bytes, 0xc000 max)\n"
        "ptxas warning : Registers are spilled to local memory in function '_Z1kPf', 8 bytes spill stores\n"
        "kernel.cu:3:10: fatal error: missing.h: No such file or directory\n")


def answers():
    for f in sorted((root / "tests" / "fixtures" / "cassettes").glob("*.jsonl")):
        put("fuzz_cassette", f.stem, f.read_text()[:6000])
        for n, line in enumerate(f.read_text().splitlines()):
            j = json.loads(line)
            if "response" in j and n < 4:
                # First byte: the finish reason (fuzz_answer_parser.cpp); 0 is "stop", 1 "length".
                put("fuzz_answer_parser", f"{f.stem}.{n}", "\0" + j["response"]["text"][:6000])
    for f in sorted((root / "tests" / "optimize" / "answers").glob("*.cu")):
        put("fuzz_answer_parser", f.name, "\0```cuda\n" + f.read_text() + "```\n")
    put("fuzz_answer_parser", "truncated", "\1Here is the kernel:\n```cuda\n__global__ void kb_forward(float* x) {\n  x[0] =")
    put("fuzz_answer_parser", "json_in_prose", '\0Sure. ```json\n{"technique": "tiling", "predicted_speedup": 1.5}\n```\nDone.')
    book = root / "tests" / "optimize" / "answer_book.jsonl"
    if book.exists():
        put("fuzz_cassette", "answer_book", "\n".join(book.read_text().splitlines()[:3])[:8000])


def recordings():
    for f in sorted((root / "tests" / "optimize" / "recordings").glob("*.jsonl"))[:4]:
        lines = f.read_text().splitlines()[:3]
        put("fuzz_recording", f.stem, "\n".join(lines)[:12000] + "\n")
        # The evaluation inside a recording is what step records carry.
    step = {"iteration": 0, "trajectory": 1, "step": 0, "start": "9d5d9c176025f863", "start_ms": 0.12,
            "state_before": "memory_bound/dram", "state_score": 0.9,
            "candidates": [{"technique": "vectorize", "label": "float4", "hash": "abc",
                            "parameters": {"block": 256},
                            "evaluation": {"compile_ok": True, "correct": True, "runtime_ms": 0.1,
                                           "reference_ms": 0.2, "check": "", "gpu_seconds": 1.5},
                            "state_after": "memory_bound/dram", "measured_speedup": 1.2,
                            "soft_verifier": {"pass": True, "summary": "ok"}}],
            "tokens": {"lowering": 1200}, "result": "abc", "end": False, "note": "why",
            "tier": "llm", "technique": "vectorize", "reason": "best prior", "predicted": 1.3,
            "confidence": 0.5, "repairs": 1, "failures": ["did not compile"], "agent_status": "ok",
            "gpu_seconds": 1.5}
    put("fuzz_step_record", "full.json", json.dumps(step))
    put("fuzz_step_record", "minimal.json", json.dumps({"iteration": 0, "trajectory": 0, "step": 0,
                                                        "start": "", "candidates": [], "result": "", "end": True}))


def tasks():
    for d in sorted((root / "examples" / "tasks").iterdir()):
        if (d / "task.json").exists():
            put("fuzz_task", d.name + ".json", (d / "task.json").read_text())
    # Outputs with tolerances of their own (a capture's task widens the atol of an output on which
    # the original varies from run to run).
    put("fuzz_task", "per_output_tolerance.json", json.dumps({
        "name": "bin_sums", "reference": {"source": "def forward(x):\n    return x.sum(0), x.amax(0)\n"},
        "inputs": [{"name": "x", "shape": [512, 32], "dtype": "float32"}],
        "outputs": [{"name": "sums", "shape": [32], "dtype": "float32", "atol": 4.5e-3},
                    {"name": "maxima", "shape": [32], "dtype": "float32", "rtol": 1e-3}],
        "tolerance": {"atol": 1e-4}}, indent=1))


def kb():
    seed = json.loads((root / "kb" / "seed" / "seed_kb.json").read_text())
    states = [k for k in seed if not k.startswith("$")]
    small = {k: v for k, v in seed.items() if k.startswith("$") and k != "$techniques"}
    if "$techniques" in seed:
        t = seed["$techniques"]
        small["$techniques"] = dict(list(t.items())[:4]) if isinstance(t, dict) else t[:4]
    for s in states[:2]:
        small[s] = seed[s]
    put("fuzz_kb_import", "seed_part.json", json.dumps(small, indent=1)[:20000])


def transcript_messages(path):
    """The client's messages of a transcript (`--> ` blocks; raw ones skipped), {{tmpdir}} and
    {{srcdir}} replaced by a folder that does not exist."""
    msgs, block = [], None
    for line in path.read_text().splitlines() + ["#"]:
        if line[:1].isspace() and block is not None:
            block.append(line.strip())
            continue
        if block:
            body = " ".join(block)
            if not body.startswith("raw:"):
                msgs.append(body.replace("{{tmpdir}}", "/fuzz").replace("{{srcdir}}", "/fuzz"))
        block = [line[4:]] if line.startswith("--> ") else None
    return msgs


def lsp():
    """fuzz_lsp takes a session as lines, one message body each (fuzz_lsp.cpp frames them);
    fuzz_framing the same messages framed; fuzz_lsp_params the params alone."""
    for f in sorted((root / "tests" / "transcript").glob("*.transcript")):
        msgs = []
        for body in transcript_messages(f):
            try:
                j = json.loads(body)
            except ValueError:
                msgs.append(body)  # malformed on purpose: kept as it is
                continue
            msgs.append(json.dumps(j, separators=(",", ":")))
            if isinstance(j, dict) and isinstance(j.get("params"), dict) and len(msgs) < 6:
                put("fuzz_lsp_params", f"{f.stem}.{len(msgs)}", json.dumps(j["params"]))
        if msgs:
            put("fuzz_lsp", f.stem, "\n".join(msgs)[:12000] + "\n")
            stream = "".join(f"Content-Length: {len(m.encode())}\r\n\r\n{m}" for m in msgs[:8])
            put("fuzz_framing", f.stem, stream[:4000])


def captures():
    """fuzz_capture: the agent's capture.json files recorded on the H100 (tests/fixtures/captures)."""
    for d in sorted((root / "tests" / "fixtures" / "captures").iterdir()):
        if (d / "capture.json").exists():
            put("fuzz_capture", d.name, (d / "capture.json").read_text())
    put("fuzz_capture", "refusal", '{"format": 1, "kernel": {"requested": "scale", "name": "scale(float*, float, int)"}, '
        '"refusal": {"reason": "managed_memory", "message": "parameter 0 points into managed memory"}}')
    # The stencil2d capture (whose sizes the target's folder has) as the agent that runs the launch
    # twice writes it when the output varies: determinism checked, the second run's file named.
    varies = json.loads((root / "tests" / "fixtures" / "captures" / "stencil2d" / "capture.json").read_text())
    varies["determinism"] = {"checked": True}
    varies["allocations"][0]["varies"] = False
    varies["allocations"][1].update({"varies": True, "again": "alloc-1.again.bin"})
    put("fuzz_capture", "stencil2d_varies", json.dumps(varies, indent=1))


def batches():
    """fuzz_batch_results: first byte 0 = OpenAI Batch output/error lines, 1 = Anthropic results;
    the answers' texts are the answer book's, in the shapes the providers document."""
    book = [json.loads(l) for l in (root / "tests" / "optimize" / "answer_book.jsonl").read_text().splitlines()[1:4]]
    texts = [b["response"]["text"][:1500] for b in book]

    def openai_ok(cid, text):
        return json.dumps({"id": "batch_req_" + cid, "custom_id": cid, "response": {
            "status_code": 200, "request_id": "req_" + cid, "body": {
                "model": "gpt-4o", "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1800, "completion_tokens": 400}}}, "error": None})

    def anthropic(cid, result):
        return json.dumps({"custom_id": cid, "result": result})

    openai = [openai_ok("r2", texts[0]), openai_ok("r1", texts[1]), openai_ok("other-run", texts[2]),
              json.dumps({"id": "batch_req_x", "custom_id": "r1", "response": None,
                          "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}}),
              json.dumps({"id": "batch_req_y", "custom_id": "a", "response": {"status_code": 400, "body": {
                  "error": {"message": "max_tokens is too large", "type": "invalid_request_error"}}}, "error": None})]
    put("fuzz_batch_results", "openai_output", "\x00" + "\n".join(openai) + "\n")
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "content": [{"type": "text", "text": texts[0]}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 1800, "output_tokens": 400}}
    results = [anthropic("a", {"type": "succeeded", "message": message}),
               anthropic("r1", {"type": "errored", "error": {"type": "error", "error": {
                   "type": "invalid_request_error", "message": "prompt is too long"}}}),
               anthropic("r2", {"type": "expired"}), anthropic("kb-0-0-0-lowering", {"type": "canceled"})]
    put("fuzz_batch_results", "anthropic_results", "\x01" + "\n".join(results) + "\n")


ncu()
diagnostics()
batches()
answers()
recordings()
tasks()
kb()
lsp()
captures()
