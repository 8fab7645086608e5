#!/usr/bin/env bash
# The local path of `kblaster bench`: our KernelBench-format problems, imported with the machine's
# PyTorch (CPU, untimed), outcomes served from recorded/, two workers sharing the run directory
# (--gpus 2), then resume, a re-run of a deleted result, bad input, and the report's figures.
# Usage: local_test.sh KBLASTER SOURCE_DIR WORK_DIR
set -euo pipefail
kblaster=$1 src=$2 work=$3
here=$src/tests/bench_pipeline
# The interpreter with PyTorch for the import: python3 in PATH, else Debian's (pyenv may shadow it).
python=${KBLASTER_TEST_PYTHON:-}
for p in python3 /usr/bin/python3; do
  [[ -z "$python" ]] && "$p" -c 'import torch' 2>/dev/null && python=$(command -v "$p")
done
[[ -n "$python" ]] || { echo "FAIL: no python3 with torch (scripts/install-deps installs python3-torch)"; exit 1; }
rm -rf "$work" && mkdir -p "$work"
run=$work/local
args() { echo "$here/kernelbench --level 1 --level 2 --out $1 --recorded $here/recorded --import-device cpu --timing-seconds 0 --python $python"; }
read -ra common <<<"$(args "$run")"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$kblaster" bench "${common[@]}" --gpus 2 >"$work/first.log" 2>&1 || { cat "$work/first.log"; fail "first run"; }
[[ $(ls "$run/results" | wc -l) == 5 ]] || fail "want 5 results, have: $(ls "$run/results")"
grep -q '"worker": "gpu1"' "$run"/results/*.json || fail "no result written by the second worker"
python3 "$here/check_report.py" "$run" local

# Resume: nothing left to do; then one deleted result is run again, alone.
out=$("$kblaster" bench "${common[@]}" 2>&1) || fail "second run: $out"
grep -q "0 run (0 not ok), 5 already done" <<<"$out" || fail "resume did not skip everything: $out"
rm "$run/results/L1_1_Scale.json"
out=$("$kblaster" bench "${common[@]}" 2>&1) || fail "third run: $out"
grep -q "1 run (0 not ok), 4 already done" <<<"$out" || fail "deleted result not re-run: $out"
python3 "$here/check_report.py" "$run" local

# Other settings into the same directory are refused; bad input gets a message, not a crash.
if out=$("$kblaster" bench "${common[@]}" --breadth 3 2>&1); then fail "other hyperparameters accepted"; fi
grep -q "other settings" <<<"$out" || fail "unclear refusal: $out"
if out=$("$kblaster" bench "$work/nowhere" --level 1 --out "$work/x" --recorded "$here/recorded" 2>&1); then fail "missing checkout accepted"; fi
grep -q "no level 1 problems" <<<"$out" || fail "unclear missing-checkout error: $out"
if out=$("$kblaster" bench "$here/kernelbench" --level 1 --problems 99 --out "$work/x" --recorded "$here/recorded" 2>&1); then
  fail "empty selection accepted"; fi
grep -q "matches no problem" <<<"$out" || fail "unclear selection error: $out"
if out=$("$kblaster" bench "${common[@]}" --shard 2/2 2>&1); then fail "bad shard accepted"; fi
grep -q "0..N-1" <<<"$out" || fail "unclear shard error: $out"

# Merge: two runs of separate shards into one, same figures.
for i in 0 1; do
  read -ra shard_args <<<"$(args "$work/shard$i")"
  "$kblaster" bench "${shard_args[@]}" --shard $i/2 >"$work/shard$i.log" 2>&1 || fail "shard $i"
done
"$kblaster" bench merge "$work/shard0" "$work/shard1" --out "$work/merged" >"$work/merge.log" 2>&1 || fail "merge"
python3 "$here/check_report.py" "$work/merged" merged
# Two runs side by side on one report.
"$kblaster" bench report "$run" "$work/merged" --out "$work/both" >/dev/null || fail "two-run report"
grep -q "| merged | all | 5 |" "$work/both/report.md" || fail "second run missing from the combined report"
echo "bench_pipeline.local: passed"
