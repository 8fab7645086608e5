#!/usr/bin/env bash
# `kblaster eval` end to end on the CPU path: an example passes with its figures, an adversarial
# candidate is rejected with its reason, and bad input gets a message and a non-zero status.
# Usage: eval_cli_test.sh KBLASTER KBLASTER_HARNESS SOURCE_DIR
set -u
kblaster=$1
export KBLASTER_HARNESS=$2
root=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# A generous watchdog: this checks what the CLI prints, and a loaded CI machine (ctest runs tests in
# parallel) once took the 10 s default past its deadline on vector_add's timed calls.
"$kblaster" eval "$root/examples/tasks/vector_add" --device cpu --max-seconds 0.2 --watchdog 60 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
if grep -q "verdict: needs_review (speedup_review)" "$tmp/out"; then
  # On a loaded machine PyTorch's multithreaded CPU add can be timed 10x slower than the
  # single-threaded candidate; the harness then flags the speedup instead of trusting it, which
  # is its job. Correctness must still hold on every seed, and the exit status says "not pass".
  echo "note: reference timing disturbed by load: speedup flagged for review"
  [[ $rc == 1 ]] || fail "vector_add: status $rc for needs_review"
  grep -q "seed .*: FAILED" "$tmp/out" && fail "vector_add: a seed failed"
else
  [[ $rc == 0 ]] || fail "vector_add: status $rc"
  grep -q "verdict: pass" "$tmp/out" || fail "vector_add: no pass verdict"
fi
grep -q "speedup" "$tmp/out" || fail "vector_add: no speedup"
grep -q "seed .*: ok" "$tmp/out" || fail "vector_add: no seed lines"
grep -q "kblaster eval: compiling" "$tmp/err" || fail "no progress line on stderr"

"$kblaster" eval "$root/examples/tasks/row_softmax" --json --max-seconds 0.2 --watchdog 60 >"$tmp/json" 2>/dev/null
python3 - "$tmp/json" <<'PY' || fail "row_softmax --json"
import json, sys
j = json.load(open(sys.argv[1]))
r = j["result"]
assert r["verdict"] == "pass", r
assert len(r["seeds"]) == 3 and all(s["ok"] for s in r["seeds"])
assert r["timing"]["speedup"] > 0 and r["timing"]["candidate"]["samples"] >= 3
assert j["device"] == "cpu"
print("row_softmax --json: pass, speedup %.3f" % r["timing"]["speedup"])
PY

"$kblaster" eval "$root/examples/tasks/vector_add" --candidate "$root/tests/harness/adversarial/zeros.cpp" >"$tmp/out" 2>/dev/null
rc=$?
cat "$tmp/out"
[[ $rc == 1 ]] || fail "zeros.cpp: status $rc, expected 1"
grep -q "verdict: fail (constant_output)" "$tmp/out" || fail "zeros.cpp not rejected as constant_output"

printf 'extern "C" int kb_forward( { }\n' >"$tmp/broken.cpp"
"$kblaster" eval "$root/examples/tasks/vector_add" --candidate "$tmp/broken.cpp" >"$tmp/out" 2>/dev/null
[[ $? == 1 ]] || fail "broken.cpp: expected status 1"
grep -q "verdict: fail (compile)" "$tmp/out" || fail "broken.cpp: no compile failure"

"$kblaster" eval "$tmp/no-such-task" >/dev/null 2>"$tmp/err"
[[ $? == 2 ]] || fail "missing task: expected status 2"
grep -q "no such task" "$tmp/err" || fail "missing task: no message"

"$kblaster" eval "$root/examples/tasks/vector_add" --candidate "$root/examples/tasks/vector_add/kernel.cu" --device cpu \
  >/dev/null 2>"$tmp/err"
[[ $? == 2 ]] || fail ".cu on the CPU: expected status 2"
grep -q "cannot run on device cpu" "$tmp/err" || fail ".cu on the CPU: no message"

echo "eval_cli_test: $failures failure(s)"
exit $((failures > 0))
