#!/usr/bin/env python3
"""Answers a `files:DIR` batch folder from an answer book: the stand-in model for deferred runs.

`kblaster optimize ... --batch files:DIR` writes each round's questions to DIR/requests-N.jsonl
(OpenAI batch input: {custom_id, method, url, body}). This writes DIR/requests-N.results.jsonl
(OpenAI batch output: {id, custom_id, response: {status_code, body}, error}) for every requests
file not answered yet, each answer chosen as kblaster's own answer-book replay chooses it: the
first entry of the request's role (the custom_id's prefix) whose `match` strings all occur in
the system prompt and the messages, an entry without `reuse` only once (remembered in
DIR/.answer-book-state.json across rounds). A request the book has no answer for is refused
(HTTP 400), which the run counts as the model's failure, as a synchronous replay does.

usage: answer_from_book.py BOOK DIR [--fail-first N]
  --fail-first N: answer the first N requests with HTTP 500 instead (the run must resubmit them)"""
import argparse
import json
import pathlib
import re
import sys


def load_book(path):
    entries = []
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        e = json.loads(line)
        if "response" in e:
            entries.append(e)
    return entries


class AnswerBook:
    """kblaster's answer-book replay, in Python: the first entry of the request's role whose
    `match` strings all occur in its text; an entry without `reuse` once (`used`: indices)."""

    def __init__(self, path, used=()):
        self.entries = load_book(path)
        self.used = set(used)

    def answer(self, role, text):
        for i, e in enumerate(self.entries):
            if (i in self.used and not e.get("reuse", False)) or (e.get("role") and e["role"] != role):
                continue
            if all(m in text for m in e.get("match", [])):
                self.used.add(i)
                return e
        return None


def role_of(custom_id):
    return custom_id.rsplit("-", 1)[0]


def request_text(system, messages):
    """The text kblaster's replay matches against: the system prompt, then each message."""
    text = system
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        text += "\n" + content
    return text


def openai_text(body):
    messages = body.get("messages", [])
    if messages and messages[0].get("role") == "system":
        return request_text(messages[0].get("content", ""), messages[1:])
    return request_text("", messages)


def chat_completion(cid, entry):
    usage = entry.get("usage", {})
    return {"id": "chatcmpl-" + cid, "object": "chat.completion", "model": entry["response"].get("model", "answer-book"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": entry["response"]["text"]},
                         "finish_reason": entry["response"].get("finish_reason", "stop")}],
            "usage": {"prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0),
                      "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}}


def openai_line(cid, status, body):
    return {"id": "batch_req_" + cid, "custom_id": cid, "response": {"status_code": status, "request_id": "req_" + cid, "body": body},
            "error": None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("book")
    ap.add_argument("dir")
    ap.add_argument("--fail-first", type=int, default=0)
    args = ap.parse_args()
    folder = pathlib.Path(args.dir)
    state_path = folder / ".answer-book-state.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {"used": [], "failed": 0}
    book = AnswerBook(args.book, state["used"])
    answered = refused = failed = 0
    files = sorted((p for p in folder.glob("requests-*.jsonl") if re.fullmatch(r"requests-\d+\.jsonl", p.name)),
                   key=lambda p: int(p.name.split("-")[1].split(".")[0]))
    for requests in files:
        out = folder / (requests.stem + ".results.jsonl")
        if out.exists():
            continue
        lines = []
        for line in requests.read_text().splitlines():
            if not line.strip():
                continue
            req = json.loads(line)
            cid, body = req["custom_id"], req["body"]
            if state["failed"] < args.fail_first:
                state["failed"] += 1
                failed += 1
                lines.append(openai_line(cid, 500, {"error": {"message": "server error (injected)"}}))
                continue
            entry = book.answer(role_of(cid), openai_text(body))
            if entry is None:
                refused += 1
                lines.append(openai_line(cid, 400, {"error": {"message": "the answer book has no answer for this " + role_of(cid) +
                                                              " request", "type": "invalid_request_error"}}))
                continue
            lines.append(openai_line(cid, 200, chat_completion(cid, entry)))
            answered += 1
        # Answers in another order than asked, as a batch returns them.
        lines.reverse()
        tmp = out.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(l) + "\n" for l in lines))
        tmp.rename(out)
    state["used"] = sorted(book.used)
    state_path.write_text(json.dumps(state))
    print(f"answer_from_book: {answered} answered, {refused} refused, {failed} failed on purpose")


if __name__ == "__main__":
    sys.exit(main())
