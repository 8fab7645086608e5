#!/usr/bin/env python3
"""The learning curve and a plain bench with the KB on a PostgreSQL server (issue 50).

Usage (through tests/kb/pg_cluster.sh, which starts a throwaway server and sets
KBLASTER_TEST_PG_URI, _HOST and _USER): learning_pg_test.py KBLASTER SOURCE_DIR WORK_DIR [RECORDING]

The recorded experiment of learning_test.py (default learning-mechanical-ucb) is replayed twice:
with its KBs in files, and with --kb naming the server's database "kb" (by a URI with a password,
which the server ignores: it trusts the socket, and it must show nowhere). The recordings are
deterministic, so the server run must count exactly what the file run counts, and both what the
GPU counted: every held-out run's attempts, the arms' totals, the start KBs' coverage and their
statistics by architecture. Then:
  - the server's KB is the learnt KB: `kblaster kb stats --kb URI` holds the training runs'
    attempts, as many as the file run's learnt KB, every one taught by KBLASTER_KB_USER;
  - the private KBs (each held-out arm's start, each held-out problem's copy) were databases
    beside it and are gone, their exports kept in the run folders (kb.json);
  - no file, report or line of output holds the password; the manifests name the server;
  - the same command again resumes with nothing to run and counts the same;
  - a plain `kblaster bench --kb URI` (no learning curve) on one held-out problem, one trajectory,
    from the seed KB, measures what the seed arm's first trajectory measured, and its server KB
    holds exactly that run's attempts; with --empty-kb its private KB is dropped as well;
  - --warm-start FILE into a server's new KB imports the file's export, --warm-start URI into a
    file KB the server's.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learning_test as lt  # noqa: E402

SECRET = "s3cret-pg-password"
USER = "bench-pg-tester"


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def run(cmd, expect=0, env_extra=None):
    env = dict(os.environ, KBLASTER_KB_USER=USER, **(env_extra or {}))
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != expect:
        fail("%s exited %d (not %d):\n%s\n%s" % (" ".join(cmd[:3]), r.returncode, expect, r.stdout[-3000:], r.stderr[-4000:]))
    if SECRET in r.stdout or SECRET in r.stderr:
        fail("the password shows in the output of %s" % " ".join(cmd[:3]))
    return r


def psql(sql, db="postgres"):
    r = subprocess.run(["psql", "-h", os.environ["KBLASTER_TEST_PG_HOST"], "-U", os.environ["KBLASTER_TEST_PG_USER"],
                        "-d", db, "-Atc", sql], capture_output=True, text=True)
    if r.returncode != 0:
        fail("psql %s: %s" % (sql, r.stderr))
    return [line for line in r.stdout.splitlines() if line]


def uri_of(db, password=True):
    host, user = os.environ["KBLASTER_TEST_PG_HOST"], os.environ["KBLASTER_TEST_PG_USER"]
    auth = "%s:%s@" % (user, SECRET) if password else ""
    return "postgresql://%s/%s?host=%s&user=%s" % (auth, db, host, user)


def databases():
    return sorted(d for d in psql("SELECT datname FROM pg_database") if d not in ("postgres", "template0", "template1"))


def kb_stats(kblaster, kb):
    return json.loads(run([kblaster, "kb", "stats", "--kb", kb, "--json"]).stdout)


def no_secret_in(folder):
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                if SECRET.encode() in f.read():
                    fail("the password is written in %s" % path)


def results_of(out):
    """Each arm's stored results: {arm/key: result}."""
    found = {}
    for arm in sorted(os.listdir(out)):
        folder = os.path.join(out, arm, "results")
        if os.path.isdir(folder):
            for name in sorted(os.listdir(folder)):
                found[arm + "/" + name] = json.load(open(os.path.join(folder, name)))
    return found


def same_runs(files, server):
    """The server run measured and counted what the file run did, result by result."""
    a, b = results_of(files), results_of(server)
    if sorted(a) != sorted(b):
        fail("the server run stored other results: %s vs %s" % (sorted(a), sorted(b)))
    for key in a:
        for field in ("status", "attempts", "techniques", "states_visited", "candidates", "correct_candidates",
                      "input_ms", "best_ms", "stop_reason", "arch"):
            if a[key].get(field) != b[key].get(field):
                fail("%s %s: file KB %s, server KB %s" % (key, field, a[key].get(field), b[key].get(field)))
    fa, fb = json.load(open(os.path.join(files, "learning.json"))), json.load(open(os.path.join(server, "learning.json")))
    if fa["summary"] != fb["summary"]:
        fail("learning.json's summary differs between the file run and the server run")
    for key in fa["context"]:
        if key != "command" and fa["context"][key] != fb["context"].get(key):
            fail("learning.json's context %s differs: file %s, server %s" % (key, fa["context"][key], fb["context"].get(key)))
    return len(a)


def check_server_experiment(kblaster, files, server, uri):
    # The learnt KB is the server's: the training runs' attempts, as many as the file's, all ours.
    learnt = kb_stats(kblaster, uri)
    on_file = kb_stats(kblaster, os.path.join(files, "learn", "kb.sqlite"))
    if learnt["backend"] != "postgresql" or learnt["attempts"] == 0:
        fail("the server's KB holds no learnt attempts: %s" % learnt)
    for key in ("attempts", "correct_attempts", "successful_attempts", "states", "optimizations", "transitions"):
        if learnt[key] != on_file[key]:
            fail("the learnt KB's %s: %s on the server, %s in the file" % (key, learnt[key], on_file[key]))
    if learnt["attempts_by_user"] != {USER: learnt["attempts"]}:
        fail("the attempts are not attributed to %s: %s" % (USER, learnt["attempts_by_user"]))
    if not learnt["updates_by_user"].get(USER):
        fail("no change attributed to %s: %s" % (USER, learnt["updates_by_user"]))
    if SECRET in json.dumps(learnt):
        fail("kb stats shows the password")
    # Every private KB was a database of its own and is gone; what the report reads of it is kept.
    if databases() != ["kb"]:
        fail("databases left on the server: %s" % databases())
    for arm in sorted(os.listdir(server)):
        if arm in ("learn", "tasks") or not os.path.isdir(os.path.join(server, arm, "results")):
            continue
        if not os.path.isfile(os.path.join(server, arm, "kb.json")):
            fail("%s keeps no export of its start KB (kb.json)" % arm)
        if os.path.exists(os.path.join(server, arm, "kb.sqlite")):
            fail("%s made a KB file although the KB is on the server" % arm)
        for key in os.listdir(os.path.join(server, arm, "work")):
            if not os.path.isfile(os.path.join(server, arm, "work", key, "kb.json")):
                fail("%s/%s keeps no export of its KB" % (arm, key))
        manifest = json.load(open(os.path.join(server, arm, "manifest.json")))
        if not manifest["kb"].startswith("postgresql://") or "***" not in manifest["kb"]:
            fail("%s's manifest does not name the server without its password: %s" % (arm, manifest["kb"]))
    learn = json.load(open(os.path.join(server, "learn", "manifest.json")))
    if learn["kb"] != uri.replace(SECRET, "***"):
        fail("the training arm's manifest names %s, not the server's KB" % learn["kb"])
    experiment = json.load(open(os.path.join(server, "experiment.json")))
    if "***" not in experiment["command"] or experiment.get("kb") != uri.replace(SECRET, "***"):
        fail("experiment.json does not name the server without its password: %s" % experiment)
    no_secret_in(server)


def plain_bench(kblaster, src, recorded, gpu, tree, work, server):
    """One held-out problem, one trajectory, from the seed KB on the server; then --empty-kb."""
    h = gpu["context"]["hyperparameters"]
    key = gpu["context"]["test"][0]
    seeded = json.load(open(os.path.join(server, "seed-s1", "results", key + ".json")))
    psql("CREATE DATABASE plain")
    uri = uri_of("plain")
    out = os.path.join(work, "plain")
    base = [kblaster, "bench", tree, "--level", key[1], "--problems", key.split("_", 1)[1],
            "--kernels", os.path.join(src, "tools", "kernelbench_initial"),
            "--harness-replay", os.path.join(recorded, "measurements.jsonl"), "--timing-seconds", "0",
            "--breadth", "1", "--depth", str(h["depth"]), "--iterations", "1", "--top-k", str(h["top_k"]),
            "--policy", h["policy"], "--budget-candidates", str(h["budget_candidates"]), "--seed", "1"]
    run(base + ["--kb", uri, "--out", out])
    r = json.load(open(os.path.join(out, "results", key + ".json")))
    n = len(r["attempts"])
    if r["status"] != "ok" or n == 0 or r["stop_reason"].startswith("error"):
        fail("the plain bench on the server did not run: %s %s" % (r["status"], r["stop_reason"]))
    if r["attempts"] != seeded["attempts"][:n]:
        fail("the plain bench's trajectory differs from the seed arm's first: %s vs %s" % (r["attempts"], seeded["attempts"]))
    stats = kb_stats(kblaster, uri)
    if stats["attempts"] != r["candidates"] - 1 or stats["attempts_by_user"] != {USER: stats["attempts"]}:
        fail("the plain bench's server KB holds %s attempts (%s), not the run's %d" %
             (stats["attempts"], stats["attempts_by_user"], r["candidates"] - 1))
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    if manifest["kb"] != uri.replace(SECRET, "***"):
        fail("the plain bench's manifest names %s" % manifest["kb"])
    if os.path.exists(os.path.join(out, "kb.sqlite")) or os.path.exists(os.path.join(out, "work", key, "kb.sqlite")):
        fail("the plain bench wrote a KB file although its KB is on the server")

    # --empty-kb: the problem's own empty KB is a database beside the shared one, dropped once stored.
    empty_out = os.path.join(work, "plain-empty")
    run(base + ["--kb", uri, "--out", empty_out, "--empty-kb"])
    e = json.load(open(os.path.join(empty_out, "results", key + ".json")))
    if e["status"] != "ok":
        fail("--empty-kb on the server: %s %s" % (e["status"], e.get("error")))
    if not os.path.isfile(os.path.join(empty_out, "work", key, "kb.json")):
        fail("--empty-kb keeps no export of the problem's KB")
    if databases() != ["kb", "plain"]:
        fail("databases left on the server after --empty-kb: %s" % databases())
    if kb_stats(kblaster, uri)["attempts"] != stats["attempts"]:
        fail("--empty-kb wrote to the shared KB")
    no_secret_in(out)
    no_secret_in(empty_out)
    return n


def warm_starts(kblaster, gpu, tree, work, files, uri):
    """--warm-start into a server's KB (a file's export imported), and from it into a file."""
    key = gpu["context"]["test"][0]
    outcomes = os.path.join(work, "no-outcomes")  # the loop is not the point: each problem fails at once
    os.makedirs(outcomes, exist_ok=True)
    base = [kblaster, "bench", tree, "--level", key[1], "--problems", key.split("_", 1)[1], "--recorded", outcomes,
            "--no-report"]

    def export(kb, name):
        path = os.path.join(work, name + ".json")
        run([kblaster, "kb", "export", path, "--kb", kb])
        return json.load(open(path))

    learnt_file = os.path.join(files, "learn", "kb.sqlite")
    psql("CREATE DATABASE warm")
    warm = uri_of("warm")
    run(base + ["--kb", warm, "--warm-start", learnt_file, "--out", os.path.join(work, "warm-server")])
    if export(warm, "warm-server") != export(learnt_file, "learnt-file"):
        fail("--warm-start FILE --kb URI: the server's KB is not the file's export")
    stats = kb_stats(kblaster, warm)
    if stats["attempts"] != 0 or not stats["updates_by_user"].get(USER):
        fail("--warm-start into the server: %s" % stats)
    manifest = json.load(open(os.path.join(work, "warm-server", "manifest.json")))
    if manifest["kb"] != warm.replace(SECRET, "***"):
        fail("the warm-started bench's manifest names %s" % manifest["kb"])

    out = os.path.join(work, "warm-file")
    run(base + ["--warm-start", uri, "--out", out])
    if export(os.path.join(out, "kb.sqlite"), "warm-file") != export(uri, "learnt-server"):
        fail("--warm-start URI: the file KB is not the server's export")
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    if manifest["warm_start"] != uri.replace(SECRET, "***"):
        fail("the manifest names the warm start %s" % manifest["warm_start"])
    no_secret_in(out)
    no_secret_in(os.path.join(work, "warm-server"))


def main():
    kblaster, src, work = sys.argv[1:4]
    recording = sys.argv[4] if len(sys.argv) > 4 else "learning-mechanical-ucb"
    if "KBLASTER_TEST_PG_URI" not in os.environ:
        fail("run me through tests/kb/pg_cluster.sh")
    recorded = os.path.join(src, "tests", "bench_pipeline", "recorded", recording)
    gpu = json.load(open(os.path.join(recorded, "learning.json")))
    if os.path.isfile(os.path.join(recorded, "tier.json")):
        fail("use a mechanical recording: the plain bench's single trajectory has no answer book of its own")
    subprocess.run(["rm", "-rf", work], check=True)
    os.makedirs(work)
    tree, files, server = (os.path.join(work, d) for d in ("tree", "files", "server"))
    ctx = gpu["context"]
    lt.build_tree(recorded, src, ctx["train"] + ctx["test"], tree)
    train, test = lt.selection(ctx["train"]), lt.selection(ctx["test"])
    uri = uri_of("kb")

    run(lt.command(kblaster, src, recorded, gpu, tree, files, train, test, None))
    cmd = lt.command(kblaster, src, recorded, gpu, tree, server, train, test, None) + ["--kb", uri]
    run(cmd)
    here = json.load(open(os.path.join(server, "learning.json")))
    lt.compare(gpu, here)
    lt.check_results(server)
    n = same_runs(files, server)
    check_server_experiment(kblaster, files, server, uri)

    # The same command again: nothing to run, the same counts, nothing left on the server.
    again = run(cmd)
    if "starting" in again.stderr:
        fail("the second run did not just resume:\n" + again.stderr[-2000:])
    lt.compare(gpu, json.load(open(os.path.join(server, "learning.json"))))
    same_runs(files, server)
    if databases() != ["kb"]:
        fail("databases left on the server after resuming: %s" % databases())

    # Another experiment into the same, already learnt KB is refused: it would learn on top of it.
    other = run(lt.command(kblaster, src, recorded, gpu, tree, os.path.join(work, "other"), train, test, None)
                + ["--kb", uri], expect=2)
    if "already holds" not in other.stderr:
        fail("a second experiment into a learnt KB was not refused clearly: " + other.stderr[-1000:])

    attempts = plain_bench(kblaster, src, recorded, gpu, tree, work, server)
    warm_starts(kblaster, gpu, tree, work, files, uri)
    if databases() != ["kb", "plain", "warm"]:
        fail("databases left on the server: %s" % databases())
    print("bench_pipeline.learning_pg (%s): passed (%d results as with files, warm / cold %s; plain bench %d attempts)"
          % (recording, n, here["summary"]["warm_over_cold"], attempts))


if __name__ == "__main__":
    main()
