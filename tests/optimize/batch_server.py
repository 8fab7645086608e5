#!/usr/bin/env python3
"""A loopback server of our own that speaks a provider's batch protocol, answering from the
answer book (tools/batch/answer_from_book.py's matching), for deferred_test.py.

  openai:    POST /v1/files (multipart, purpose=batch), POST /v1/batches, GET /v1/batches/ID,
             GET /v1/files/ID/content, POST /v1/batches/ID/cancel
  anthropic: POST /v1/messages/batches, GET /v1/messages/batches/ID, GET .../ID/results,
             POST .../ID/cancel

A batch is "in progress" for --polls looks, then ends. --fail N answers the first N requests with
a server error (OpenAI: status 500 in the output file; Anthropic: an "errored" result), and
--expire-first ends the first batch as expired with none of its requests run. GET /debug/stats
says how many batches were created and how many requests they held.

usage: batch_server.py {openai|anthropic} BOOK PORT_FILE [--polls N] [--fail N] [--expire-first]"""
import argparse
import email.parser
import email.policy
import http.server
import json
import pathlib
import sys
import threading

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "batch"))
from answer_from_book import AnswerBook, chat_completion, openai_line, openai_text, request_text, role_of  # noqa: E402

args = None
book = None
lock = threading.Lock()
files, batches = {}, {}
stats = {"batches": 0, "requests": 0, "failed": 0, "cancelled": 0}


def answer_openai(lines):
    out = []
    for req in lines:
        cid = req["custom_id"]
        if stats["failed"] < args.fail:
            stats["failed"] += 1
            out.append(openai_line(cid, 500, {"error": {"message": "server error (injected)"}}))
            continue
        entry = book.answer(role_of(cid), openai_text(req["body"]))
        out.append(openai_line(cid, 200, chat_completion(cid, entry)) if entry else
                   openai_line(cid, 400, {"error": {"message": "no answer in the book", "type": "invalid_request_error"}}))
    out.reverse()  # a batch's answers come in no particular order
    return out


def answer_anthropic(requests):
    out = []
    for req in requests:
        cid, params = req["custom_id"], req["params"]
        if stats["failed"] < args.fail:
            stats["failed"] += 1
            out.append({"custom_id": cid, "result": {"type": "errored", "error": {"type": "error", "error": {
                "type": "api_error", "message": "server error (injected)"}}}})
            continue
        system = params.get("system", "")
        if isinstance(system, list):
            system = "".join(p.get("text", "") for p in system)
        entry = book.answer(role_of(cid), request_text(system, params.get("messages", [])))
        if entry is None:
            out.append({"custom_id": cid, "result": {"type": "errored", "error": {"type": "error", "error": {
                "type": "invalid_request_error", "message": "no answer in the book"}}}})
            continue
        usage = entry.get("usage", {})
        out.append({"custom_id": cid, "result": {"type": "succeeded", "message": {
            "id": "msg_" + cid, "type": "message", "role": "assistant", "model": entry["response"].get("model", "answer-book"),
            "content": [{"type": "text", "text": entry["response"]["text"]}], "stop_reason": "end_turn",
            "usage": {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}}}})
    out.reverse()
    return out


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length", 0))
        return self.rfile.read(n)

    def do_GET(self):
        with lock:
            p = self.path
            if p == "/debug/stats":
                return self.send(200, stats)
            if args.protocol == "openai":
                if p.startswith("/v1/batches/"):
                    b = batches.get(p.rsplit("/", 1)[1])
                    if not b:
                        return self.send(404, {"error": {"message": "no such batch"}})
                    self.advance(b)
                    return self.send(200, b["public"])
                if p.startswith("/v1/files/") and p.endswith("/content"):
                    f = files.get(p.split("/")[3])
                    return self.send(200, f, "application/jsonl") if f is not None else self.send(404, {"error": {"message": "no file"}})
            else:
                parts = p.split("/")
                if p.startswith("/v1/messages/batches/") and len(parts) == 5:
                    b = batches.get(parts[4])
                    if not b:
                        return self.send(404, {"error": {"type": "not_found_error", "message": "no such batch"}})
                    self.advance(b)
                    return self.send(200, b["public"])
                if p.startswith("/v1/messages/batches/") and p.endswith("/results"):
                    b = batches.get(parts[4])
                    if not b or b["public"]["processing_status"] != "ended":
                        return self.send(404, {"error": {"type": "not_found_error", "message": "no results yet"}})
                    return self.send(200, "".join(json.dumps(l) + "\n" for l in b["results"]), "application/x-jsonl")
            return self.send(404, {"error": {"message": "unknown path " + p}})

    def advance(self, b):
        """One more look: after --polls looks the batch ends (answered, or expired)."""
        b["looks"] += 1
        if b["looks"] < args.polls or b["ended"]:
            return
        b["ended"] = True
        expire = args.expire_first and b["index"] == 1
        if args.protocol == "openai":
            pub = b["public"]
            if expire:
                pub["status"] = "expired"
                return  # nothing ran: no output file, no error file
            out = answer_openai(b["lines"])
            ok = [l for l in out if l["response"]["status_code"] == 200]
            bad = [l for l in out if l["response"]["status_code"] != 200]
            fid = "file-out-" + pub["id"]
            files[fid] = "".join(json.dumps(l) + "\n" for l in ok)
            pub["output_file_id"] = fid
            if bad:
                files["file-err-" + pub["id"]] = "".join(json.dumps(l) + "\n" for l in bad)
                pub["error_file_id"] = "file-err-" + pub["id"]
            pub["status"] = "completed"
            pub["request_counts"] = {"total": len(out), "completed": len(ok), "failed": len(bad)}
        else:
            pub = b["public"]
            b["results"] = ([{"custom_id": r["custom_id"], "result": {"type": "expired"}} for r in b["requests"]]
                            if expire else answer_anthropic(b["requests"]))
            pub["processing_status"] = "ended"
            pub["results_url"] = f"http://127.0.0.1:{self.server.server_port}/v1/messages/batches/{pub['id']}/results"

    def do_POST(self):
        with lock:
            p, raw = self.path, self.body()
            if args.protocol == "openai":
                if p == "/v1/files":
                    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                        b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
                    fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                              for part in msg.iter_parts()}
                    if fields.get("purpose") != b"batch" or "file" not in fields:
                        return self.send(400, {"error": {"message": "purpose=batch and a file are required"}})
                    fid = f"file-in-{len(files) + 1}"
                    files[fid] = fields["file"].decode()
                    return self.send(200, {"id": fid, "object": "file", "purpose": "batch", "bytes": len(fields["file"])})
                if p == "/v1/batches":
                    req = json.loads(raw)
                    text = files.get(req.get("input_file_id"))
                    if text is None or req.get("endpoint") != "/v1/chat/completions":
                        return self.send(400, {"error": {"message": "unknown input file or endpoint"}})
                    lines = [json.loads(l) for l in text.splitlines() if l.strip()]
                    stats["batches"] += 1
                    stats["requests"] += len(lines)
                    bid = f"batch_{stats['batches']}"
                    batches[bid] = {"index": stats["batches"], "looks": 0, "ended": False, "lines": lines,
                                    "public": {"id": bid, "object": "batch", "endpoint": "/v1/chat/completions",
                                               "input_file_id": req["input_file_id"], "status": "validating",
                                               "completion_window": req.get("completion_window", "24h")}}
                    return self.send(200, batches[bid]["public"])
                if p.startswith("/v1/batches/") and p.endswith("/cancel"):
                    b = batches.get(p.split("/")[3])
                    if not b:
                        return self.send(404, {"error": {"message": "no such batch"}})
                    stats["cancelled"] += 1
                    b["ended"] = True
                    b["public"]["status"] = "cancelled"
                    return self.send(200, b["public"])
            else:
                if p == "/v1/messages/batches":
                    req = json.loads(raw)
                    reqs = req.get("requests", [])
                    stats["batches"] += 1
                    stats["requests"] += len(reqs)
                    bid = f"msgbatch_{stats['batches']}"
                    batches[bid] = {"index": stats["batches"], "looks": 0, "ended": False, "requests": reqs,
                                    "public": {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                                               "results_url": None}}
                    return self.send(200, batches[bid]["public"])
                if p.startswith("/v1/messages/batches/") and p.endswith("/cancel"):
                    b = batches.get(p.split("/")[4])
                    if not b:
                        return self.send(404, {"error": {"type": "not_found_error", "message": "no such batch"}})
                    stats["cancelled"] += 1
                    b["ended"] = True
                    b["results"] = [{"custom_id": r["custom_id"], "result": {"type": "canceled"}} for r in b["requests"]]
                    b["public"]["processing_status"] = "ended"
                    b["public"]["results_url"] = f"http://127.0.0.1:{self.server.server_port}/v1/messages/batches/{b['public']['id']}/results"
                    return self.send(200, b["public"])
            return self.send(404, {"error": {"message": "unknown path " + p}})


def main():
    global args, book
    ap = argparse.ArgumentParser()
    ap.add_argument("protocol", choices=["openai", "anthropic"])
    ap.add_argument("book")
    ap.add_argument("port_file")
    ap.add_argument("--polls", type=int, default=2)
    ap.add_argument("--fail", type=int, default=0)
    ap.add_argument("--expire-first", action="store_true")
    args = ap.parse_args()
    book = AnswerBook(args.book)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # Written whole, then renamed: the test waits for the file and must never read it half written.
    port_file = pathlib.Path(args.port_file)
    port_file.with_suffix(".tmp").write_text(str(server.server_port))
    port_file.with_suffix(".tmp").rename(port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
