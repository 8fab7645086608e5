#!/usr/bin/env python3
"""GPU test (part of capture.gpu): Optimize, from an LSP client, on a kernel of a program that
has no task. The daemon must build and run the saved file with the run.* settings, capture the
launch, optimize, and answer with a result; an edit it sends must be the whole program with the
rewrite in place (main kept), and the diagnostic on the kernel must say what was measured.

    gpu_editor_program.py KBLASTER PROGRAM.cu KERNEL ARGS...
"""
import json
import re
import os
import signal
import subprocess
import sys


def send(proc, msg):
    body = json.dumps(msg).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def read(proc):
    length = None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit("gpu_editor_program: the daemon closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(proc.stdout.read(length))


def request(proc, msg):
    """Sends a request and returns its answer, answering the daemon's own requests meanwhile."""
    send(proc, msg)
    while True:
        m = read(proc)
        if m.get("id") == msg["id"] and not m.get("method"):
            return m
        if "id" in m and m.get("method"):
            send(proc, {"jsonrpc": "2.0", "id": m["id"], "result": None})


def main():
    signal.alarm(600)  # a daemon that never answers fails the test instead of hanging it
    kblaster, program, kernel, args = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3], sys.argv[4:]
    uri = "file://" + program
    text = open(program).read()
    proc = subprocess.Popen([kblaster, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    settings = {"run": {"args": args}, "optimize": {"breadth": 2, "depth": 2, "iterations": 1},
                "analysis": {"debounceMs": 0}}
    send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"capabilities": {"workspace": {"applyEdit": True}},
                           "initializationOptions": {"workspaceTrusted": True, "kblaster": settings}}})
    send(proc, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send(proc, {"jsonrpc": "2.0", "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": "cuda", "version": 1, "text": text}}})
    # The profile on save: the kernel's launch captured and replayed alone under ncu, shown in
    # the hover with the launch, the achieved rates against the GPU's peaks and its time.
    profiled = request(proc, {"jsonrpc": "2.0", "id": 10, "method": "workspace/executeCommand",
                              "params": {"command": "kblaster.profile", "arguments": [{"uri": uri}]}})
    print("  kblaster.profile:", json.dumps(profiled.get("result", profiled.get("error")))[:600])
    line_no = next(i for i, l in enumerate(text.splitlines()) if "__global__" in l and kernel + "(" in l)
    column = text.splitlines()[line_no].index(kernel + "(")
    hover = request(proc, {"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover",
                           "params": {"textDocument": {"uri": uri}, "position": {"line": line_no, "character": column + 1}}})
    shown = ((hover.get("result") or {}).get("contents") or {}).get("value", "")
    print("  hover:\n    " + shown.replace("\n", "\n    "))
    profile_ok = all(s in shown for s in ("Profiled: launch 0 of", "replayed alone under ncu", "in the program",
                                          "- Achieved: DRAM", "- Launch: grid", "Last runtime: **"))
    # Rates against the peaks are shares of them: a unit read wrongly shows as thousands of percent.
    achieved = next((l for l in shown.splitlines() if l.startswith("- Achieved:")), "")
    shares = [float(x) for x in re.findall(r"\(([0-9.]+)%\)", achieved)]
    profile_ok = profile_ok and len(shares) == 2 and all(0 <= x <= 100 for x in shares)
    print("  hover shows the captured launch's profile:", profile_ok, shares)
    # The program's share: one more run of it under the timeline collector gives the file's
    # program line at the top and each kernel's share of the GPU time in its lens.
    lenses = request(proc, {"jsonrpc": "2.0", "id": 12, "method": "textDocument/codeLens",
                            "params": {"textDocument": {"uri": uri}}}).get("result") or []
    titles = [(l["range"]["start"]["line"], (l.get("command") or {}).get("title", "")) for l in lenses]
    print("  lenses:", titles)
    program_line = any(line == 0 and t.startswith("program: GPU busy") for line, t in titles)
    share_lens = any(" of GPU time" in t for _, t in titles)
    print("  the program's line at the top:", program_line, "; a kernel's share in its lens:", share_lens)
    profile_ok = profile_ok and program_line and share_lens
    send(proc, {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand",
                "params": {"command": "kblaster.optimize", "arguments": [{"uri": uri, "kernel": kernel}]}})
    result, edits, message = None, [], None
    while result is None or message is None:
        m = read(proc)
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri:
            # Published before the command's answer: the kernel's result diagnostic.
            for d in m["params"]["diagnostics"]:
                if d.get("source") == "kblaster" and "optimized" in d["message"]:
                    message = d["message"]
        elif m.get("method") == "workspace/applyEdit":
            edits.append(m["params"]["edit"])
            send(proc, {"jsonrpc": "2.0", "id": m["id"], "result": {"applied": True}})
        elif "id" in m and m.get("method"):
            send(proc, {"jsonrpc": "2.0", "id": m["id"], "result": None})
        elif m.get("id") == 2:
            result = m
            if "error" in m:
                break
        elif m.get("method") == "$/progress":
            v = m["params"]["value"]
            if v.get("message"):
                print("  progress:", v["message"])
    send(proc, {"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
    send(proc, {"jsonrpc": "2.0", "method": "exit"})
    proc.wait(timeout=30)
    print("  result:", json.dumps(result.get("result", result.get("error"))))
    print("  diagnostic:", message)
    ok = profile_ok and "result" in result and result["result"]["candidates"] > 0
    for e in edits:
        new_text = e["changes"][uri][0]["newText"]
        ok = ok and "int main(" in new_text and "kb_forward" not in new_text
    print("  edits applied:", len(edits))
    return 0 if ok else 1


sys.exit(main())
