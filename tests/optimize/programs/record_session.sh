#!/usr/bin/env bash
# Records, on the GPU machine, the model session that tests/optimize/program_session_test.py (the
# CLI) and the editor's Optimize (tests/e2e/optimize_session.js, e2e.vscode_spmv_session) replay in
# CI: `kblaster optimize spmv_csr.cu --kernel spmv_csr --apply -- 12288` on a copy of
# tests/optimize/programs/spmv_csr.cu with the answer book as the model, the live harness and ncu,
# a fresh KB and the options the editor sends (breadth 2, depth 2, iterations 2, top-k 3, seed 1).
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
KBLASTER_CAPTURE_RECORD="$rec/captures" XDG_CACHE_HOME="$work/cache" \
  "$kblaster" optimize "$work/program/spmv_csr.cu" --kernel spmv_csr --replay "$root/tests/optimize/answer_book.jsonl" \
  --kb "$work/kb.sqlite" --out "$work/run" --breadth 2 --depth 2 --iterations 2 --top-k 3 --seed 1 \
  --harness-record "$rec/loop-spmv_csr.jsonl" --apply -- 12288 > "$rec/session.log" 2>&1
echo "exit $?" >> "$rec/session.log"
cp "$work/run/report.md" "$work/run/report.json" "$work/kb.sqlite" "$rec/" 2>/dev/null
cp "$work/program/spmv_csr.cu" "$rec/spmv_csr.applied.cu" 2>/dev/null
tar -C "$rec" -czf "$out/session.tgz" .
tail -25 "$rec/session.log"
