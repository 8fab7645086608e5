#!/usr/bin/env python3
"""Runs a whole LSP session against the real `kblaster serve` binary and checks every reply.

A transcript file is a sequence of blocks, in the style of clangd's lit tests:

    # comment lines start with '#'
    --> {client message, may span lines}
    <-- {expected server message}
    <-- {another one}
    !! exit 0

`-->` messages are sent in order (framed with Content-Length); a `<--` group (consecutive `<--`
blocks) waits for that many server messages and matches them in any order, since progress
notifications and replies may interleave. Matching is exact: same keys, same values, except
that a string "{{any}}" matches any value and "{{re:PATTERN}}" matches a string by regex.
`--> raw: TEXT` sends TEXT unframed-processed: '\\r\\n' escapes are expanded and no
Content-Length is added (for malformed-input tests). `!! sleep MS` pauses. `!! exit N`
closes stdin after the session and checks the exit code. `!! reply-to-server` answers the last
server->client request received with a null result.

`{{tmpdir}}` anywhere in the file is replaced by a fresh temporary directory (the session's
files; XDG_DATA_HOME points there too, so the knowledge base is a fresh seeded one), and
`{{srcdir}}` by the repository's root (fixtures). `!! write PATH TEXT` writes TEXT ('\\n' and
other escapes expanded, as in raw:) to PATH, for sessions that need the file on disk (a live
profile runs only a saved file).

Usage: run_transcript.py KBLASTER_BINARY FILE.transcript
"""
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time


def parse_blocks(text):
    blocks = []
    current = None
    for line in text.splitlines():
        if line.startswith("#") and current is None:
            continue
        if line.startswith("-->") or line.startswith("<--") or line.startswith("!!"):
            if current:
                blocks.append(current)
            kind = line[:3] if not line.startswith("!!") else "!!"
            current = [kind, line[len(kind):].strip()]
            continue
        if line.startswith("#"):
            continue
        if current is None:
            if line.strip():
                raise SystemExit(f"text outside a block: {line!r}")
            continue
        current[1] += "\n" + line
    if current:
        blocks.append(current)
    return blocks


def matches(expected, actual, path="$"):
    if isinstance(expected, str) and expected == "{{any}}":
        return None
    if isinstance(expected, str) and expected.startswith("{{re:") and expected.endswith("}}"):
        if isinstance(actual, str) and re.fullmatch(expected[5:-2], actual, re.S):
            return None
        return f"{path}: {actual!r} does not match /{expected[5:-2]}/"
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {actual!r}"
        if set(expected) != set(actual):
            return f"{path}: keys {sorted(actual)} != expected {sorted(expected)}"
        for k in expected:
            err = matches(expected[k], actual[k], f"{path}.{k}")
            if err:
                return err
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            return f"{path}: expected a list of {len(expected)}, got {json.dumps(actual)[:200]}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            err = matches(e, a, f"{path}[{i}]")
            if err:
                return err
        return None
    if expected != actual or type(expected) is not type(actual):
        return f"{path}: {actual!r} != expected {expected!r}"
    return None


class Reader:
    def __init__(self, stream):
        self.fd = stream.fileno()
        self.buffer = b""

    def next_message(self, deadline):
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                headers = self.buffer[:end].decode().split("\r\n")
                length = None
                for h in headers:
                    name, _, value = h.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length is None:
                    raise AssertionError(f"server sent a header without Content-Length: {headers}")
                if len(self.buffer) >= end + 4 + length:
                    body = self.buffer[end + 4:end + 4 + length]
                    self.buffer = self.buffer[end + 4 + length:]
                    return json.loads(body)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return None
            self.buffer += chunk


def run(binary, path):
    with tempfile.TemporaryDirectory(prefix="kblaster-transcript-") as tmp:
        return run_in(binary, path, tmp)


def run_in(binary, path, tmp):
    srcdir = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    text = open(path, encoding="utf-8").read().replace("{{tmpdir}}", tmp).replace("{{srcdir}}", srcdir)
    blocks = parse_blocks(text)
    env = dict(os.environ, XDG_DATA_HOME=tmp)
    proc = subprocess.Popen([binary, "serve", "--log-file", os.devnull, "--log-level", "error"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    reader = Reader(proc.stdout)
    last_server_request = None
    expected_exit = None
    i = 0
    failures = 0
    while i < len(blocks):
        kind, body = blocks[i]
        if kind == "-->":
            if body.startswith("raw:"):
                data = body[4:].strip().encode().decode("unicode_escape").encode("latin-1")
            else:
                data = json.dumps(json.loads(body)).encode()
                data = b"Content-Length: %d\r\n\r\n" % len(data) + data
            proc.stdin.write(data)
            proc.stdin.flush()
            i += 1
        elif kind == "!!":
            words = body.split()
            if words[0] == "sleep":
                time.sleep(int(words[1]) / 1000)
            elif words[0] == "write":
                _, target, content = body.split(None, 2)
                with open(target, "wb") as f:
                    f.write(content.encode().decode("unicode_escape").encode("latin-1"))
            elif words[0] == "exit":
                expected_exit = int(words[1])
            elif words[0] == "reply-to-server":
                msg = json.dumps({"jsonrpc": "2.0", "id": last_server_request["id"], "result": None}).encode()
                proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(msg) + msg)
                proc.stdin.flush()
            i += 1
        else:
            group = []
            while i < len(blocks) and blocks[i][0] == "<--":
                group.append(json.loads(blocks[i][1]))
                i += 1
            deadline = time.monotonic() + 60  # nvcc on a loaded machine takes a while
            pending = list(group)
            while pending:
                got = reader.next_message(deadline)
                if got is None:
                    print(f"FAIL {path}: timed out waiting for {json.dumps(pending[0])[:300]}")
                    failures += 1
                    pending = []
                    break
                if "method" in got and "id" in got:
                    last_server_request = got
                errors = [matches(e, got) for e in pending]
                if None in errors:
                    pending.pop(errors.index(None))
                else:
                    print(f"FAIL {path}: unexpected server message\n  got:  {json.dumps(got, sort_keys=True)[:1000]}")
                    for e, err in zip(pending, errors):
                        print(f"  want: {json.dumps(e, sort_keys=True)[:400]}\n   ({err})")
                    failures += 1
                    pending = []
    proc.stdin.close()
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        print(f"FAIL {path}: the server did not exit")
        return 1
    leftover = reader.next_message(time.monotonic() + 0.2)
    if leftover is not None:
        print(f"FAIL {path}: unexpected extra message {json.dumps(leftover)[:300]}")
        failures += 1
    if expected_exit is not None and code != expected_exit:
        print(f"FAIL {path}: exit code {code}, expected {expected_exit}")
        failures += 1
    stderr = proc.stderr.read().decode(errors="replace")
    if failures:
        print("server stderr:\n" + stderr[-2000:])
        return 1
    print(f"PASS {path}")
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2]))
