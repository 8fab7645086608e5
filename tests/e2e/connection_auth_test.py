#!/usr/bin/env python3
"""Who may talk to `kblaster serve` over a socket (ctest e2e.connection_auth), on real sockets.

1. TCP on loopback: the daemon writes a random token to a 0600 file in a 0700 folder and says
   where on stderr. A client that speaks LSP at once, and one with a wrong token, are refused:
   the connection is closed and not one byte comes back; each refusal is logged with the peer.
   The client that sends `KBLASTER-TOKEN <token>` first is served. The token is in no log.
2. Unix socket: `--listen unix:PATH` makes a 0600 socket in a 0700 folder and serves this
   user; `--listen unix` alone uses $XDG_RUNTIME_DIR/kblaster/kblaster.sock; a folder others
   can write is refused; a second daemon on a live socket is refused, a stale one is replaced.
3. Another uid, for real, when this runs as root (CI's container; `id` says): a client as
   uid 65534 cannot even open the 0600 socket, and a daemon run as 65534 refuses root (who
   passes any file mode) through SO_PEERCRED, logs it, and then serves a client of its own
   uid. Not root: said and skipped (tests/unit/server/connection_auth_test.cpp checks the
   decision with fake credentials).

Usage: connection_auth_test.py --binary build/cli/kblaster
"""
import argparse
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

failures = []
NOBODY = 65534
# Generous: a loaded CI machine; nothing here waits for it unless something is wrong.
WAIT_S = 30


def check(ok, what, seen=""):
    print(("ok   " if ok else "FAIL ") + what + ("" if ok or not seen else f": {seen}"), flush=True)
    if not ok:
        failures.append(what)
    return ok


def frame(message):
    data = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


INITIALIZE = frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
SHUTDOWN = frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
EXIT = frame({"jsonrpc": "2.0", "method": "exit"})


def send_to_refused(sock, data):
    """Sends to a peer that may already have closed the connection: a refusal can come first."""
    try:
        sock.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def read_all(sock):
    """Everything the daemon sends until it closes the connection (b"" for nothing)."""
    sock.settimeout(WAIT_S)
    got = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return got
            got += chunk
    except socket.timeout:
        return got + b"<still open>"
    except ConnectionResetError:
        return got


def read_reply(sock, rid):
    """The JSON reply to request `rid` (None when the connection ends first)."""
    sock.settimeout(WAIT_S)
    buffer = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end >= 0:
            length = int(re.search(rb"Content-Length: *(\d+)", buffer[:end], re.I).group(1))
            if len(buffer) >= end + 4 + length:
                body = json.loads(buffer[end + 4:end + 4 + length])
                buffer = buffer[end + 4 + length:]
                if body.get("id") == rid and "method" not in body:
                    return body
                continue
        try:
            chunk = sock.recv(65536)
        except (socket.timeout, ConnectionResetError):
            return None
        if not chunk:
            return None
        buffer += chunk


class Daemon:
    """`kblaster serve ARGS` with its stderr collected; `line(pattern)` waits for a line of it."""

    def __init__(self, binary, args, env, preexec_fn=None):
        self.proc = subprocess.Popen([binary, "serve", *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env, preexec_fn=preexec_fn)
        self.stderr = ""
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            with self.cond:
                self.stderr += raw.decode(errors="replace")
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def line(self, pattern):
        with self.cond:
            self.cond.wait_for(lambda: re.search(pattern, self.stderr) or self.proc.poll() is not None, WAIT_S)
            m = re.search(pattern, self.stderr)
        return m

    def wait_end(self):
        """The exit code, once the process has ended and its stderr is all read."""
        code = self.proc.wait(timeout=WAIT_S)
        self.reader.join(timeout=WAIT_S)
        return code

    def end(self):
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.wait(timeout=WAIT_S)


def serve_session(sock):
    """initialize, shutdown, exit on a connected socket; the initialize reply."""
    sock.sendall(INITIALIZE)
    reply = read_reply(sock, 1)
    sock.sendall(SHUTDOWN)
    read_reply(sock, 2)
    sock.sendall(EXIT)
    return reply


def mode_of(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def tcp_case(binary, tmp):
    print("-- TCP on loopback: the token", flush=True)
    log = os.path.join(tmp, "tcp.log")
    env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(tmp, "xdg-run"))
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    d = Daemon(binary, ["--listen", "127.0.0.1:0", "--log-file", log, "--log-level", "debug"], env)
    try:
        token_at = d.line(r"kblaster: token in (\S+)")
        where = d.line(r"listening on 127\.0\.0\.1:(\d+)")
        if not check(token_at and where, "the daemon says where the token is and where it listens", d.stderr):
            return
        token_file, port = token_at.group(1), int(where.group(1))
        token = open(token_file).read().strip()
        check(re.fullmatch(r"[0-9a-f]{64}", token) is not None, "the token is 32 random bytes in hex")
        check(mode_of(token_file) == 0o600, "the token file is 0600", oct(mode_of(token_file)))
        check(os.path.dirname(token_file) == os.path.join(env["XDG_RUNTIME_DIR"], "kblaster")
              and mode_of(os.path.dirname(token_file)) == 0o700, "in a 0700 folder under $XDG_RUNTIME_DIR", token_file)

        # A client that does not know the token: an LSP message at once.
        bare = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        send_to_refused(bare, INITIALIZE)
        check(read_all(bare) == b"", "a client without the token is closed with nothing served")
        bare.close()

        wrong_token = "0" * 64 if token != "0" * 64 else "1" * 64
        wrong = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        send_to_refused(wrong, f"KBLASTER-TOKEN {wrong_token}\n".encode() + INITIALIZE)
        check(read_all(wrong) == b"", "a client with a wrong token is closed with nothing served")
        wrong.close()

        right = socket.create_connection(("127.0.0.1", port), timeout=WAIT_S)
        right.sendall(f"KBLASTER-TOKEN {token}\n".encode())
        reply = serve_session(right)
        check(reply is not None and reply.get("result", {}).get("serverInfo", {}).get("name") == "kblaster",
              "the client that proves the token is served", json.dumps(reply)[:300])
        right.close()
        check(d.proc.wait(timeout=WAIT_S) == 0, "the daemon ends with 0 after shutdown and exit")
        check(not os.path.exists(token_file), "the token file is removed once the client has proven it")
    finally:
        d.end()
    text = open(log).read()
    refusals = re.findall(r"refused a TCP connection from 127\.0\.0\.1:\d+: (.*)", text)
    check(len(refusals) == 2, "both refusals are logged with the peer's address", text[-2000:])
    check(any("did not start with a token line" in r for r in refusals) and any(r == "wrong token" for r in refusals),
          "each with its reason", str(refusals))
    check(token not in text and wrong_token not in text, "neither the token nor the wrong one is in the log")
    check(token not in d.stderr, "the token is not on stderr")


def unix_case(binary, tmp):
    print("-- Unix socket: mode 0600, this user", flush=True)
    folder = os.path.join(tmp, "sock")
    path = os.path.join(folder, "kb.sock")
    log = os.path.join(tmp, "unix.log")
    d = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], dict(os.environ))
    try:
        if not check(d.line(r"listening on unix:" + re.escape(path)), "the daemon says where it listens", d.stderr):
            return
        check(stat.S_ISSOCK(os.lstat(path).st_mode) and mode_of(path) == 0o600, "the socket is 0600", oct(mode_of(path)))
        check(mode_of(folder) == 0o700, "its folder is 0700", oct(mode_of(folder)))

        second = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], dict(os.environ))
        code = second.wait_end()
        check(code != 0 and "another daemon is listening there" in second.stderr,
              "a second daemon on a live socket is refused", second.stderr)

        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            reply = serve_session(s)
        check(reply is not None and "result" in reply, "this user's client is served", json.dumps(reply)[:300])
        check(d.proc.wait(timeout=WAIT_S) == 0, "the daemon ends with 0")
        check(not os.path.exists(path), "the socket file is removed")
    finally:
        d.end()

    # A daemon killed outright leaves its socket; the next one replaces it.
    d = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], dict(os.environ))
    d.line(r"listening on unix:")
    d.end()
    d = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], dict(os.environ))
    check(d.line(r"listening on unix:") is not None and d.proc.poll() is None, "a stale socket is replaced", d.stderr)
    d.end()

    # `--listen unix`: the runtime folder.
    run = os.path.join(tmp, "xdg-run-unix")
    os.makedirs(run, mode=0o700)
    d = Daemon(binary, ["--listen", "unix", "--log-file", log], dict(os.environ, XDG_RUNTIME_DIR=run))
    expected = os.path.join(run, "kblaster", "kblaster.sock")
    check(d.line(r"listening on unix:" + re.escape(expected)) is not None, "--listen unix is $XDG_RUNTIME_DIR/kblaster/kblaster.sock",
          d.stderr)
    d.end()

    # A folder other users can write: they could swap the socket; refused.
    open_folder = os.path.join(tmp, "open")
    os.makedirs(open_folder)
    os.chmod(open_folder, 0o777)
    d = Daemon(binary, ["--listen", f"unix:{open_folder}/kb.sock", "--log-file", log], dict(os.environ))
    code = d.wait_end()
    check(code != 0 and "writable by other users" in d.stderr, "a socket in a folder others can write is refused", d.stderr)


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def connect_as_nobody(path, send_session):
    """In a child process as uid 65534: connect to `path`; 'EACCES', 'served' or 'refused'."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        outcome = "error"
        try:
            as_nobody()
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
                if send_session:
                    reply = serve_session(s)
                    outcome = "served" if reply and "result" in reply else "refused"
                else:
                    outcome = "connected"
        except PermissionError:
            outcome = "EACCES"
        except Exception as e:  # noqa: BLE001 - anything else is reported to the parent
            outcome = f"error {e!r}"
        os.write(w, outcome.encode())
        os._exit(0)
    os.close(w)
    out = b""
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return out.decode()


def other_uid_case(binary, tmp):
    print("-- Unix socket: another uid", flush=True)
    if os.geteuid() != 0:
        print("skip: not root, so no second uid to connect as (the decision itself is unit-tested)", flush=True)
        return
    # The folders a uid-65534 daemon and client need.
    os.chmod(tmp, 0o755)
    mine = os.path.join(tmp, "root-sock")
    path = os.path.join(mine, "kb.sock")
    log = os.path.join(tmp, "root.log")
    d = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], dict(os.environ))
    try:
        d.line(r"listening on unix:")
        os.chmod(mine, 0o711)  # let uid 65534 reach the socket, so that its mode alone stops it
        check(connect_as_nobody(path, False) == "EACCES", "uid 65534 cannot open root's 0600 socket")
    finally:
        d.end()

    theirs = os.path.join(tmp, "nobody")
    os.makedirs(theirs)
    os.chown(theirs, NOBODY, NOBODY)
    path = os.path.join(theirs, "sock", "kb.sock")
    log = os.path.join(theirs, "daemon.log")
    env = dict(os.environ, HOME=theirs, TMPDIR=theirs, XDG_STATE_HOME=theirs, XDG_DATA_HOME=theirs, XDG_CACHE_HOME=theirs)
    env.pop("XDG_RUNTIME_DIR", None)
    d = Daemon(binary, ["--listen", f"unix:{path}", "--log-file", log], env, preexec_fn=as_nobody)
    try:
        if not check(d.line(r"listening on unix:") is not None, "a daemon runs as uid 65534", d.stderr):
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)  # root passes the file's mode; SO_PEERCRED stops it
            send_to_refused(s, INITIALIZE)
            check(read_all(s) == b"", "root's connection to uid 65534's daemon is closed with nothing served")
        check(connect_as_nobody(path, True) == "served", "the daemon's own uid is served next")
        check(d.proc.wait(timeout=WAIT_S) == 0, "the daemon ends with 0")
    finally:
        d.end()
    text = open(log).read()
    check(re.search(r"refused a connection on unix:\S+: uid 0 \(pid \d+\) is not the daemon's user \(uid 65534\)", text)
          is not None, "the refusal is logged with the uid", text[-1500:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    tmp = tempfile.mkdtemp(prefix="kblaster-auth-")
    try:
        tcp_case(binary, tmp)
        unix_case(binary, tmp)
        other_uid_case(binary, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
