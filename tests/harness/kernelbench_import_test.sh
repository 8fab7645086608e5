#!/usr/bin/env bash
# `kblaster import kernelbench` end to end on the CPU: two KernelBench-format problems of our own
# (tests/fixtures/kernelbench/: Linear+ReLU with parameters and a buffer, softmax without weights)
# are imported with the machine's PyTorch (Debian's python3-torch in CI), then `kblaster eval`
# judges the imported tasks (TorchScript module references) with a correct host-code candidate
# (pass) and a wrong one (rejected). A degenerate problem (linear_relu_clamp.py: always 0) is imported
# with a warning, the healthy ones without. Bad input gets a message and a non-zero status.
# Usage: kernelbench_import_test.sh KBLASTER KBLASTER_HARNESS SOURCE_DIR
set -u
kblaster=$1
export KBLASTER_HARNESS=$2
root=$3
fixtures=$root/tests/fixtures/kernelbench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The interpreter with PyTorch: python3 in PATH, else Debian's (a pyenv python3 may shadow it).
python=${KBLASTER_TEST_PYTHON:-}
for p in python3 /usr/bin/python3; do
  [[ -z "$python" ]] && "$p" -c 'import torch' 2>/dev/null && python=$(command -v "$p")
done
if [[ -z "$python" ]]; then
  echo "FAIL: no python3 with PyTorch (scripts/install-deps installs Debian's python3-torch)"
  exit 1
fi
echo "python: $python"

check_task() {  # check_task TASK_DIR INIT N_PARAMS
  "$python" - "$@" <<'PY'
import json, os, sys
d, init, n_params = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = json.load(open(os.path.join(d, "task.json")))
assert t["reference"] == {"torchscript": "model.pt"}, t["reference"]
assert os.path.getsize(os.path.join(d, "model.pt")) > 0
assert t["inputs"][0]["init"] == init, t["inputs"]
assert len(t["kernelbench"]["parameters"]) == n_params, t["kernelbench"]["parameters"]
e, c = t["kernelbench"]["eager"], t["kernelbench"]["compile"]
assert e["status"] == "measured" and e["median_ms"] > 0 and e["samples"] >= 10, e
assert c["status"] == "measured" and c["median_ms"] > 0 or c["status"] == "unavailable" and c["reason"], c
print("%s: inputs %s, eager %.4f ms, torch.compile %s" % (t["name"], [(i["shape"], i["init"]) for i in t["inputs"]],
      e["median_ms"], c.get("median_ms", c.get("reason"))))
PY
}

evaluate() {  # evaluate TASK CANDIDATE EXPECTED_STATUS WHAT
  "$kblaster" eval "$1" --candidate "$2" --max-seconds 0.2 >"$tmp/eval" 2>"$tmp/eval.err"
  local rc=$?
  cat "$tmp/eval"
  [[ $rc == "$3" ]] || { fail "$4: eval status $rc, expected $3"; cat "$tmp/eval.err"; }
}

# Linear + ReLU * scale: input, then linear.weight, linear.bias (parameters), then scale (buffer).
"$kblaster" import kernelbench "$fixtures/linear_relu.py" --out "$tmp/linear_relu" --python "$python" \
  --timing-seconds 0.2 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" "$tmp/err"
[[ $rc == 0 ]] || fail "import linear_relu: status $rc"
grep -q "kblaster import: exporting linear_relu.py" "$tmp/err" || fail "no progress line on stderr"
grep -q "torch.compile: " "$tmp/out" || fail "no torch.compile line"
grep -q "kblaster import: probing the reference" "$tmp/err" || fail "linear_relu: the reference was not probed"
grep -q "degenerate" "$tmp/err" "$tmp/out" && fail "linear_relu: flagged degenerate"
check_task "$tmp/linear_relu" randn 3 || fail "linear_relu task.json"
grep -Eq 'in\[1\] +linear\.weight +float32 +\[96, 128\] +parameter' "$tmp/linear_relu/kernel.cu" || fail "stub: in[1]"
grep -Eq 'in\[2\] +linear\.bias .*parameter' "$tmp/linear_relu/kernel.cu" || fail "stub: in[2]"
grep -Eq 'in\[3\] +scale .*buffer' "$tmp/linear_relu/kernel.cu" || fail "stub: in[3]"
grep -q 'extern "C" int kb_forward' "$tmp/linear_relu/kernel.cu" || fail "stub: no kb_forward"
evaluate "$tmp/linear_relu" "$fixtures/linear_relu_cpu.cpp" 0 "linear_relu_cpu.cpp"
grep -q "verdict: pass" "$tmp/eval" || fail "linear_relu_cpu.cpp not passed"
evaluate "$tmp/linear_relu" "$fixtures/linear_relu_wrong.cpp" 1 "linear_relu_wrong.cpp"
grep -q "verdict: fail (tolerance)" "$tmp/eval" || fail "linear_relu_wrong.cpp not rejected by tolerance"

# Softmax: no weights, uniform inputs.
"$kblaster" import kernelbench "$fixtures/softmax.py" --out "$tmp/softmax" --python "$python" \
  --timing-seconds 0.2 >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
[[ $rc == 0 ]] || { fail "import softmax: status $rc"; cat "$tmp/err"; }
check_task "$tmp/softmax" uniform 0 || fail "softmax task.json"
evaluate "$tmp/softmax" "$fixtures/softmax_cpu.cpp" 0 "softmax_cpu.cpp"
grep -q "verdict: pass" "$tmp/eval" || fail "softmax_cpu.cpp not passed"
evaluate "$tmp/softmax" "$fixtures/softmax_wrong.cpp" 1 "softmax_wrong.cpp"
grep -q "verdict: fail" "$tmp/eval" || fail "softmax_wrong.cpp not rejected"

# Degenerate: the output is 0 for every randn input. Imported, with a warning and the summary.
"$kblaster" import kernelbench "$fixtures/linear_relu_clamp.py" --out "$tmp/linear_relu_clamp" --python "$python" \
  --no-timing >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
grep warning "$tmp/err"
[[ $rc == 0 ]] || { fail "import linear_relu_clamp: status $rc"; cat "$tmp/err"; }
grep -q "kblaster import: warning: degenerate task: the reference's output 0 is always 0" "$tmp/err" ||
  fail "linear_relu_clamp: no warning that its output is constant"
grep -q "degenerate: output constant over the declared inputs" "$tmp/out" || fail "linear_relu_clamp: no summary line"
"$kblaster" import kernelbench "$fixtures/linear_relu_clamp.py" --out "$tmp/linear_relu_clamp2" --python "$python" \
  --no-timing --no-probe >/dev/null 2>"$tmp/err"
grep -q "probing\|degenerate" "$tmp/err" && fail "--no-probe: the reference was probed"

# Bad input: each must fail with status 1 and say why.
expect_error() {  # expect_error WHAT PATTERN ARGS...
  local what=$1 pattern=$2
  shift 2
  "$kblaster" import kernelbench "$@" >/dev/null 2>"$tmp/err"
  local rc=$?
  [[ $rc == 1 ]] || fail "$what: status $rc, expected 1"
  grep -Eq "$pattern" "$tmp/err" || { fail "$what: no message matching '$pattern'"; cat "$tmp/err"; }
  echo "$what: $(grep -E "$pattern" "$tmp/err" | head -1)"
}
printf 'import torch\nraise RuntimeError("boom in the problem")\n' >"$tmp/raises.py"
printf 'import torch\ndef get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n' >"$tmp/no_model.py"
printf 'import time\ntime.sleep(60)\n' >"$tmp/slow.py"
sed 's/return \[torch.rand(batch_size, dim) \* 4 - 2\]/return [torch.rand(batch_size, dim), 3]/' "$fixtures/softmax.py" \
  >"$tmp/scalar_input.py"
printf '#!/bin/sh\nexec %s -S "$@"\n' "$python" >"$tmp/python_without_torch"  # -S: no site-packages
chmod +x "$tmp/python_without_torch"
expect_error "missing problem" "no such file" "$tmp/none.py" --out "$tmp/x1" --python "$python"
expect_error "python missing" "not found.*python3-torch" "$fixtures/softmax.py" --out "$tmp/x2" --python "$tmp/no-python"
expect_error "torch missing" "PyTorch is not installed.*python3-torch" "$fixtures/softmax.py" --out "$tmp/x3" \
  --python "$tmp/python_without_torch"
expect_error "problem raising" "raised while loading(.|\n)*" "$tmp/raises.py" --out "$tmp/x4" --python "$python"
grep -q "boom in the problem" "$tmp/err" || fail "problem raising: its exception is not shown"
expect_error "no Model" "defines no 'Model'" "$tmp/no_model.py" --out "$tmp/x5" --python "$python"
expect_error "timeout" "did not finish within 3 s" "$tmp/slow.py" --out "$tmp/x6" --python "$python" --timeout 3
expect_error "non-tensor input" "get_inputs\(\)\[1\] is a int" "$tmp/scalar_input.py" --out "$tmp/x7" --python "$python"

echo "kernelbench_import_test: $failures failure(s)"
exit $((failures > 0))
