#!/bin/bash
# GPU figures (issue 35): does the harness measure a captured kernel as the program runs it?
# For each of our own capture programs: the original kernel's time in the program (the capture's
# own events) and in the harness (the original as the reference, and as a candidate: the
# unchanged kernel must read 1.00x); then the answer book's rewrite carried into a copy of the
# program (--apply, which re-captures it), its time in the harness (the run's best) and in the
# program (captured again from the edited copy). Prints a Markdown table and one check per row:
#   unchanged kernel within 3 % of 1.00x; harness within 10 % of the program, original and rewrite.
#   tests/capture/gpu_figures.sh KBLASTER WORK_DIR
set -u
kblaster=$(realpath "$1"); work=${2:-/tmp/kblaster-figures}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache
failures=0
check() { if [[ $2 == 0 ]]; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi; }
# capture_ms PROGRAM KERNEL LAUNCH OUT ARGS...: captures, writes OUT.json, prints the task folder
capture() {
  local src=$1 kernel=$2 launch=$3 out=$4; shift 4
  "$kblaster" capture "$src" --kernel "$kernel" --launch "$launch" --json -- "$@" > "$out.json" 2> "$out.err" || { tail -3 "$out.err" >&2; return 1; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['task'])" "$out.json"
}
field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1]))
for k in sys.argv[2].split('.'): j=j[k]
print(j)" "$1" "$2"; }

rows=()
for spec in "stencil2d stencil2d 1 1000 1000 3" "histogram histogram 0 1000000" "row_reduce row_sum 0 2048 1000" "transpose transpose 0 1000 700"; do
  set -- $spec
  name=$1 kernel=$2 launch=$3; shift 3
  args=("$@")
  task=$(capture "$here/programs/$name.cu" "$kernel" "$launch" "$work/$name" "${args[@]}") || { check "capture $name" 1; continue; }
  prog_ms=$(field "$work/$name.json" time_ms)
  "$kblaster" eval "$task" --json > "$work/$name-eval.json" 2> "$work/$name-eval.err"
  orig_ms=$(field "$work/$name-eval.json" result.timing.reference.median_ms)
  self_ms=$(field "$work/$name-eval.json" result.timing.candidate.median_ms)
  self_x=$(field "$work/$name-eval.json" result.timing.speedup)
  judge_ms=$(field "$work/$name-eval.json" result.timing.candidate.judge_ms)
  calls=$(field "$work/$name-eval.json" result.timing.calls_per_sample)
  python3 -c "import sys; x=float(sys.argv[1]); sys.exit(0 if abs(x-1) <= 0.03 else 1)" "$self_x"
  check "$name: the unchanged kernel reads ${self_x}x (within 3 % of 1.00x)" $?
  python3 -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a/b-1) <= 0.10 else 1)" "$orig_ms" "$prog_ms"
  check "$name: the original in the harness ($orig_ms ms) within 10 % of the program ($prog_ms ms)" $?
  # The rewrite: the answer book's, carried into a copy of the program and re-captured.
  cp "$here/programs/$name.cu" "$work/my_$name.cu"
  "$kblaster" optimize "$work/my_$name.cu" --kernel "$kernel" --launch "$launch" --replay "$here/../optimize/answer_book.jsonl" \
    --no-mechanical-first --breadth 1 --depth 1 --iterations 1 --seed 1 --kb "$work/$name.sqlite" --out "$work/$name-run" --apply \
    -- "${args[@]}" > "$work/$name-run.log" 2>&1
  rw_ms=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['best']['runtime_ms'])" "$work/$name-run/report.json" 2>/dev/null || echo nan)
  rw_prog=nan
  if ! cmp -s "$here/programs/$name.cu" "$work/my_$name.cu"; then
    capture "$work/my_$name.cu" "$kernel" "$launch" "$work/$name-rewrite" "${args[@]}" > /dev/null && rw_prog=$(field "$work/$name-rewrite.json" time_ms)
  fi
  if [[ $rw_prog != nan && $rw_ms != nan ]]; then
    python3 -c "import sys; a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(a/b-1) <= 0.10 else 1)" "$rw_ms" "$rw_prog"
    check "$name: the rewrite in the harness ($rw_ms ms) within 10 % of the program ($rw_prog ms)" $?
  else
    echo "  $name: no rewrite applied: $(grep -v '^kblaster optimize: \[' "$work/$name-run.log" | tail -2 | tr '\n' ' ')"
  fi
  rows+=("| $name | $prog_ms | $orig_ms | $self_ms | $self_x | $judge_ms | $calls | $rw_prog | $rw_ms |")
done
echo
echo "| program | original in the program (ms) | original in the harness (ms) | unchanged kernel as a candidate (ms) | its speedup | judge's own figure (ms) | calls a sample | rewrite in the program (ms) | rewrite in the harness (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
echo "failures: $failures"
exit $failures
