#!/usr/bin/env bash
# Records, on the GPU machine, the model session that tests/optimize/program_session_test.py (the
# CLI) and the editor's Optimize (tests/e2e/optimize_session.js, e2e.vscode_spmv_session) replay in
# CI: `kblaster optimize spmv_csr.cu --kernel spmv_csr --apply -- 12288` on a copy of
# tests/optimize/programs/spmv_csr.cu with the answer book as the model, the live harness and ncu,
# a fresh KB and the options the editor sends (breadth 2, depth 2, iterations 2, top-k 3, seed 1),
# once with the CLI's default policy and once with the editors' (weighted).
# KBLASTER_CAPTURE_RECORD keeps the capture of the program and the re-capture of the edited one.
# usage: record_session.sh KBLASTER OUTDIR   (KBLASTER_HARNESS, and KBLASTER_BWRAP where bwrap is
# not on PATH, set as for any live run; writes OUTDIR/session.tgz: loop-spmv_csr.jsonl, captures/,
# the run's report, log and KB)
set -uo pipefail
kblaster=${1:?usage: record_session.sh KBLASTER OUTDIR}
out=${2:?usage: record_session.sh KBLASTER OUTDIR}
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
rec=$work/rec
mkdir -p "$rec/captures" "$work/program"
cp "$root/tests/optimize/programs/spmv_csr.cu" "$work/program/"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$rec/environment.txt" 2>&1
# Twice, into one recording: as the CLI's test runs it (the default selection policy) and as the
# editors' tests do (weighted): each policy tries its own candidates, and both replays must find
# every one of them. Each run on a fresh copy of the program (--apply writes into it).
record_run() {  # NAME POLICY-OPTIONS...
  local name=$1
  shift
  mkdir -p "$work/$name"
  cp "$root/tests/optimize/programs/spmv_csr.cu" "$work/$name/"
  KBLASTER_CAPTURE_RECORD="$rec/captures" XDG_CACHE_HOME="$work/cache" \
    "$kblaster" optimize "$work/$name/spmv_csr.cu" --kernel spmv_csr --replay "$root/tests/optimize/answer_book.jsonl" \
    --kb "$work/kb-$name.sqlite" --out "$work/run-$name" --breadth 2 --depth 2 --iterations 2 --top-k 3 --seed 1 "$@" \
    --harness-record "$rec/loop-spmv_csr.jsonl" --apply -- 12288 > "$rec/session-$name.log" 2>&1
  echo "exit $?" >> "$rec/session-$name.log"
}
record_run cli
record_run editor --policy weighted
ln -sfn run-cli "$work/run"
cp "$work/kb-cli.sqlite" "$work/kb.sqlite"
cp "$work/cli/spmv_csr.cu" "$work/program/spmv_csr.cu"
cp "$rec/session-cli.log" "$rec/session.log"
cp "$work/run/report.md" "$work/run/report.json" "$work/kb.sqlite" "$rec/" 2>/dev/null
cp "$work/program/spmv_csr.cu" "$rec/spmv_csr.applied.cu" 2>/dev/null
tar -C "$rec" -czf "$out/session.tgz" .
tail -25 "$rec/session.log"
