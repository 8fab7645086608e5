#!/bin/bash
# GPU test (label gpu): capture launches from ordinary CUDA programs of our own (no task, no
# kb_forward, no PyTorch), check that each original verifies against itself, that wrong rewrites
# are refused naming the allocation, that what cannot be captured is refused with the reason, and
# that an original whose result varies from run to run (float atomics) is detected and verified
# within a tolerance widened on that output only. On each capture, the mechanical tier and the
# answer book (the stand-in model) each produce a verified candidate whose speedup is reported.
#   tests/capture/gpu_capture_test.sh KBLASTER WORK_DIR
# Needs nvcc, a GPU, kblaster-harness (KBLASTER_HARNESS) and libkblaster-capture.so beside KBLASTER.
set -u
kblaster=$(realpath "$1"); work=${2:-/tmp/kblaster-capture-test}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
export XDG_CACHE_HOME=$work/cache
failures=0
check() {  # check NAME CONDITION-RESULT(0 ok)
  if [[ $2 == 0 ]]; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}
capture() {  # capture PROGRAM KERNEL LAUNCH ARGS... -> prints the task folder
  local prog=$1 kernel=$2 launch=$3; shift 3
  "$kblaster" capture "$here/programs/$prog.cu" --kernel "$kernel" --launch "$launch" --json -- "$@" > "$work/$prog.json" 2> "$work/$prog.err"
  local rc=$?
  cat "$work/$prog.err" >&2
  [[ $rc == 0 ]] && python3 -c "import json; print(json.load(open('$work/$prog.json'))['task'])"
  return $rc
}
# capture_facts NAME: what the agent's second run found (capture.json), as one line; 0 when the
# launch ran twice and no allocation varied.
capture_facts() {
  python3 - "$work/$1.json" <<'PY'
import json, sys
c = json.load(open(json.load(open(sys.argv[1]))["capture"] + "/capture.json"))
varies = [a.get("varies") for a in c["allocations"]]
print("determinism", c.get("determinism"), "varies", varies)
sys.exit(0 if c.get("determinism", {}).get("checked") is True and varies and not any(varies) else 1)
PY
}
verdict() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); r=j.get('result',j); print(r.get('verdict'), r.get('check',''), '|', r.get('reason', j.get('error',''))[:300])" "$1"; }
evaluate() {  # evaluate NAME TASK [CANDIDATE] -> the verdict line
  local name=$1 task=$2; shift 2
  local cand=(); [[ $# -gt 0 ]] && cand=(--candidate "$1")
  "$kblaster" eval "$task" "${cand[@]}" --json > "$work/eval-$name.json" 2> "$work/eval-$name.err"
  verdict "$work/eval-$name.json"
}

declare -A tasks
for spec in "stencil2d stencil2d 1 1000 1000 3" "histogram histogram 0 1000000" "row_reduce row_sum 0 2048 1000" "transpose transpose 0 1000 700"; do
  set -- $spec
  name=$1
  t0=$SECONDS
  if task=$(capture "$@"); then
    tasks[$name]=$task
    echo "captured $name in $((SECONDS - t0)) s: $(python3 -c "import json; j=json.load(open('$work/$name.json')); print(j['kernel'], j['grid'], j['block'], round(j['time_ms'],4), 'ms', [(a['name'], a['dtype'], a['elements'], a['written']) for a in j['allocations']])")"
    check "capture $name" 0
    facts=$(capture_facts "$name"); rc=$?
    echo "  run twice: $facts"
    check "$name: the launch ran twice and nothing varied (histogram's atomics are integers)" $rc
    line=$(evaluate "$name-original" "$task")
    echo "  original against itself: $line"
    [[ $line == pass* ]]; check "$name original verifies against itself" $?
  else
    check "capture $name" 1
  fi
done

# An original that varies from run to run: float sums built with atomicAdd in whatever order the
# blocks arrive. The capture says that its output varies (and keeps the second run), the task
# widens that output's atol only and says so, the original verifies against itself within it,
# and a rewrite that loses contributions is still refused. With the second run turned off, the
# capture says that determinism was not checked.
if task=$(capture bin_sum bin_sum 0 4194304 32); then
  check "capture bin_sum" 0
  python3 - "$work/bin_sum.json" "$task/task.json" > "$work/bin_sum.facts" <<'PY'
import json, os, sys
r = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
c = json.load(open(r["capture"] + "/capture.json"))
a = c["allocations"]
print("  determinism", c.get("determinism"), "varies", [x.get("varies") for x in a], "again", [x.get("again") for x in a])
print("  outputs", [(o["name"], o.get("atol"), o.get("rtol")) for o in t["outputs"]])
for n in r["notes"]:
    print("  note:", n)
ok = (c.get("determinism", {}).get("checked") is True and len(a) == 2
      and a[0].get("varies") is False and "again" not in a[0]
      and a[1].get("varies") is True and os.path.isfile(os.path.join(r["capture"], a[1]["again"]))
      and len(t["outputs"]) == 1 and t["outputs"][0].get("atol", 0) > 1e-4
      and any("varies between two runs on output 0 (sums, parameter 1)" in n and "widened" in n for n in r["notes"]))
sys.exit(0 if ok else 1)
PY
  rc=$?
  cat "$work/bin_sum.facts"
  check "bin_sum: the capture says its output varies, and the task widens that output's atol and says so" $rc
  line=$(evaluate bin_sum-original "$task")
  echo "  original against itself: $line"
  [[ $line == pass* ]]; check "bin_sum original verifies against itself within the widened tolerance" $?
  python3 - "$task/kernel.cu" "$work/bin_sum_lossy.cu" <<'PY'
import sys
s = open(sys.argv[1]).read()
loop = "i < n; i += gridDim.x * blockDim.x)"
assert loop in s
open(sys.argv[2], "w").write(s.replace(loop, "i < n - 256; i += gridDim.x * blockDim.x)"))
PY
  line=$(evaluate bin_sum-lossy "$task" "$work/bin_sum_lossy.cu")
  echo "  bin_sum losing its last 256 values: $line"
  [[ $line == fail* && $line == *"sums, parameter 1"* ]]; check "a rewrite that loses contributions is refused despite the wider atol" $?
else
  check "capture bin_sum" 1
fi
"$kblaster" capture "$here/programs/bin_sum.cu" --kernel bin_sum --env KBLASTER_CAPTURE_REPEAT=0 --json -- 4194304 32 \
  > "$work/bin_sum_once.json" 2> "$work/bin_sum_once.err"
rc=$?
said=$(python3 -c "
import json, sys; r = json.load(open(sys.argv[1])); c = json.load(open(r['capture'] + '/capture.json'))
print(c.get('determinism'), '|', ' '.join(r['notes']))" "$work/bin_sum_once.json" 2>&1)
echo "  bin_sum with KBLASTER_CAPTURE_REPEAT=0: $said"
[[ $rc == 0 && $said == *"'checked': False"* && $said == *"was not checked"* ]]; check "with the second run off, the capture says determinism was not checked" $?

# Wrong rewrites: an off-by-one tail (the grid rounded down: the last 8 columns are never
# written) and a missing __syncthreads.
if [[ -n ${tasks[stencil2d]:-} ]]; then
  sed 's/stencil2d<<<dim3(63, 63, 1)/stencil2d<<<dim3(62, 63, 1)/' "${tasks[stencil2d]}/kernel.cu" > "$work/stencil_offbyone.cu"
  ! cmp -s "${tasks[stencil2d]}/kernel.cu" "$work/stencil_offbyone.cu"; check "the off-by-one rewrite differs from the original" $?
  line=$(evaluate stencil-offbyone "${tasks[stencil2d]}" "$work/stencil_offbyone.cu")
  echo "  stencil2d with an off-by-one tail: $line"
  [[ $line == fail* && $line == *"out, parameter 1"* && $line == *"first at"* ]]; check "off-by-one refused naming the allocation and the element" $?
fi
if [[ -n ${tasks[row_reduce]:-} ]]; then
  python3 - "${tasks[row_reduce]}/kernel.cu" "$work/row_sum_nosync.cu" <<'PY'
import sys
s = open(sys.argv[1]).read()
loop = "    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n    __syncthreads();\n"
assert loop in s
open(sys.argv[2], "w").write(s.replace(loop, "    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];\n"))
PY
  line=$(evaluate row-sum-nosync "${tasks[row_reduce]}" "$work/row_sum_nosync.cu")
  echo "  row_sum without __syncthreads: $line"
  [[ $line == fail* && $line == *"out, parameter 1"* ]]; check "missing __syncthreads refused naming the allocation" $?
fi

# What cannot be captured is refused with the reason.
capture managed scale 0 > /dev/null 2> "$work/managed.msg"; rc=$?
echo "  managed memory: $(tail -1 "$work/managed.msg")"
[[ $rc != 0 ]] && grep -q "managed" "$work/managed.msg"; check "managed memory refused" $?
capture stencil2d stencil2d 9 64 64 2 > /dev/null 2> "$work/few.msg"; rc=$?
echo "  launch 9 of 2: $(tail -1 "$work/few.msg")"
[[ $rc != 0 ]] && grep -q "2 time(s)" "$work/few.msg"; check "a launch that never happens refused" $?

# The mechanical tier on each capture: a verified candidate and its measured speedup.
for name in "${!tasks[@]}"; do
  run=$work/optimize-$name
  "$kblaster" optimize "${tasks[$name]}" --kb "$run.sqlite" --out "$run" --no-llm --breadth 2 --depth 2 --iterations 1 --seed 1 \
    > "$run.log" 2>&1
  rc=$?
  summary=$(python3 -c "
import json; r=json.load(open('$run/report.json')); i,b,t=r['input'],r['best'],r['totals']
print('input %.4f ms, best %.4f ms, %.2fx over the input; %d candidates, GPU %.1f s' % (i['runtime_ms'], b['runtime_ms'], b['speedup_over_input'], t['candidates'], t['gpu_seconds']))" 2>&1)
  echo "  optimize $name (mechanical): rc=$rc: $summary"
  [[ $rc == 0 ]]; check "mechanical optimize on $name" $?
done

# The model tier on each capture, with the answer book as the model (no LLM runs here): one
# model step (--no-mechanical-first, so the step asks the model whatever technique it picks),
# whose answer (tests/optimize/answers/NAME.cu: the kernel rewritten, the launcher generated for
# the sizes above) must verify against the original kernel and be measured faster than it.
for name in "${!tasks[@]}"; do
  run=$work/answer-book-$name
  "$kblaster" optimize "${tasks[$name]}" --replay "$here/../optimize/answer_book.jsonl" --no-mechanical-first \
    --kb "$run.sqlite" --out "$run" --breadth 1 --depth 1 --iterations 1 --seed 1 > "$run.log" 2>&1
  rc=$?
  summary=$(python3 - "$run/report.json" <<'PY' 2>&1
import json, sys
r = json.load(open(sys.argv[1])); i, b, t = r["input"], r["best"], r["totals"]
model = [(s["technique"], c) for it in r["iterations"] for tr in it["trajectories"] for s in tr["steps"]
         if s["tier"] == "llm" for c in s["candidates"]]
verified = [(tech, c) for tech, c in model if c["correct"] and c["hash"] == b["hash"]]
print('input %.4f ms, best %.4f ms, %.2fx over the input; %d candidates, GPU %.1f s; the model step: %s' % (
    i["runtime_ms"], b["runtime_ms"], b["speedup_over_input"], t["candidates"], t["gpu_seconds"],
    "; ".join("%s: %s%s" % (tech, "verified" if c["correct"] else "refused (%s)" % c["check"],
                            ", %.2fx" % c["measured_speedup"] if c.get("measured_speedup") else "") for tech, c in model)
    or "none (%s)" % "; ".join(s.get("note", "") for it in r["iterations"] for tr in it["trajectories"] for s in tr["steps"])))
sys.exit(0 if verified and b["speedup_over_input"] > 1.0 else 1)
PY
)
  ok=$?
  echo "  optimize $name (answer book): rc=$rc: $summary"
  [[ $rc == 0 && $ok == 0 ]]; check "answer book on $name: its rewrite verified and measured faster than the input" $?
  [[ $rc == 0 && $ok == 0 ]] || tail -5 "$run.log"
done

# The program path: optimize a copy of the transpose program by its kernel name, carry the best
# rewrite back, re-capture the edited program and apply it only when its outputs match.
cp "$here/programs/transpose.cu" "$work/my_transpose.cu"
"$kblaster" optimize "$work/my_transpose.cu" --kernel transpose --no-llm --breadth 2 --depth 2 --iterations 1 --seed 1 \
  --kb "$work/program.sqlite" --out "$work/program-run" --apply -- 1000 700 > "$work/program-run.log" 2>&1
rc=$?
grep -v "^kblaster optimize: \[" "$work/program-run.log" | tail -8
if grep -q "changes the launch" "$work/program-run.log"; then
  cmp -s "$here/programs/transpose.cu" "$work/my_transpose.cu"; check "a changed launch is reported and the file left alone" $?
elif grep -q "re-captures to the same outputs" "$work/program-run.log"; then
  ! cmp -s "$here/programs/transpose.cu" "$work/my_transpose.cu" && [[ -f "$work/program-run/my_transpose.cu.orig" ]]
  check "the verified rewrite re-captures to the same outputs and is applied, the original kept" $?
else
  grep -q "1.00x over the input" "$work/program-run.log"; check "optimize on the program (rc=$rc): nothing better, nothing applied" $?
fi

# A rewrite that changes the launch: the answer book's row_sum takes one warp per row, so its
# grid becomes (rows + 7) / 8 blocks, computed from the kernel's parameters. The new launch is
# carried to the program's call site in the program's own terms, the edited program re-captures
# to the same outputs, and it is applied.
cp "$here/programs/row_reduce.cu" "$work/my_row_reduce.cu"
"$kblaster" optimize "$work/my_row_reduce.cu" --kernel row_sum --replay "$here/../optimize/answer_book.jsonl" --no-mechanical-first \
  --breadth 1 --depth 1 --iterations 1 --seed 1 --kb "$work/carry.sqlite" --out "$work/carry-run" --apply -- 2048 1000 \
  > "$work/carry-run.log" 2>&1
rc=$?
grep -v "^kblaster optimize: \[" "$work/carry-run.log" | tail -8
grep -n "row_sum<<<" "$work/my_row_reduce.cu"
grep -q "was carried to 1 call site" "$work/carry-run.log" && grep -q "re-captures to the same outputs" "$work/carry-run.log" &&
  grep -q "row_sum<<<dim3(((rows) + 7) / 8, 1, 1), 256>>>(x, out, rows, cols);" "$work/my_row_reduce.cu"
check "a changed launch is carried to the call site, re-captured to the same outputs and applied (rc=$rc)" $?

# More than one shape: row_sum captured at 2048 x 1000 and, with --shape, at 333 x 77 (rows of
# 308 bytes: most start off a 16-byte boundary and end in a partial float4). The answer book's
# rewrite (float4 loads with a scalar head and tail) verifies on both, the edited program
# re-captures to the same outputs at both, and it is applied. The same rewrite without its
# scalar tail loop is exact at 1000 columns (4000-byte rows: no head, no tail) and wrong at 77:
# it verifies on the first shape and is refused on the second, naming the shape, the output and
# the first mismatching element; nothing is applied.
cp "$here/programs/row_reduce.cu" "$work/my_shapes.cu"
"$kblaster" optimize "$work/my_shapes.cu" --kernel row_sum --replay "$here/../optimize/answer_book.jsonl" --no-mechanical-first \
  --breadth 1 --depth 1 --iterations 1 --seed 1 --kb "$work/shapes.sqlite" --out "$work/shapes-run" --apply --shape "333 77" \
  -- 2048 1000 > "$work/shapes-run.log" 2>&1
rc=$?
grep -v "^kblaster optimize: \[" "$work/shapes-run.log" | tail -12
grep -q "every candidate is verified on all 2 captured shapes" "$work/shapes-run.log" &&
  grep -q "re-captures to the same outputs (.*), on all 2 captured shapes" "$work/shapes-run.log" &&
  grep -q "row_sum<<<dim3(((rows) + 7) / 8, 1, 1), 256>>>" "$work/my_shapes.cu"
check "a rewrite verified on two captured shapes, re-captured at both and applied (rc=$rc)" $?
python3 - "$here/../optimize/answer_book.jsonl" "$work/tailless_book.jsonl" <<'PY'
import json, sys
tail = "  for (int c = head + quads * 4 + lane; c < cols; c += 32) acc += r[c];\n"
out, dropped = [], 0
for line in open(sys.argv[1]):
    entry = json.loads(line)
    text = entry.get("response", {}).get("text", "")
    if tail in text:
        entry["response"]["text"] = text.replace(tail, "")
        dropped += 1
    out.append(json.dumps(entry))
assert dropped, "the answer book's row_sum has no scalar tail loop to drop"
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
cp "$here/programs/row_reduce.cu" "$work/my_tailless.cu"
"$kblaster" optimize "$work/my_tailless.cu" --kernel row_sum --replay "$work/tailless_book.jsonl" --no-mechanical-first \
  --breadth 1 --depth 1 --iterations 1 --seed 1 --kb "$work/tailless.sqlite" --out "$work/tailless-run" --apply --shape "333 77" \
  -- 2048 1000 > "$work/tailless-run.log" 2>&1
rc=$?
grep -v "^kblaster optimize: \[" "$work/tailless-run.log" | tail -6
refusal=$(grep -o "but not on launch 0 of my_tailless.cu 333 77: [^|]*" "$work/tailless-run/report.md" | head -1)
echo "  tailless row_sum: $refusal"
[[ $refusal == *"out, parameter 1"* && $refusal == *"first at"* ]] && cmp -s "$here/programs/row_reduce.cu" "$work/my_tailless.cu"
check "a rewrite right at 2048 x 1000 and wrong at 333 x 77 is refused naming the shape, the output and the element; the file is unchanged" $?

# A program built by its own build: saxpy's file has no main; build.sh links it with main.cu.
# kblaster runs that build, then the program, captures the launch, verifies the original against
# itself, optimizes it and checks the best rewrite in the program by building it there (the file
# is put back, and built again, whatever the outcome). Linked with the static runtime (nvcc's
# default), the launches are hidden, and the refusal says how to build it.
cp -r "$here/programs/split" "$work/split"
own=(--build "bash build.sh" --run ./split_app)
"$kblaster" capture "$work/split/saxpy_kernels.cu" --kernel saxpy "${own[@]}" --json -- 1000000 > "$work/split.json" 2> "$work/split.err"
rc=$?
tail -3 "$work/split.err"
if [[ $rc == 0 ]]; then
  task=$(python3 -c "import json; print(json.load(open('$work/split.json'))['task'])")
  echo "  captured: $(python3 -c "import json; j=json.load(open('$work/split.json')); print(j['kernel'], j['grid'], j['block'], j['time_ms'], 'ms')")"
  line=$(evaluate split-original "$task")
  echo "  original against itself: $line"
  [[ $line == pass* ]]; check "a program built by its own build: captured, and the original verifies against itself" $?
else
  check "a program built by its own build: captured (rc=$rc)" 1
fi
cp "$work/split/saxpy_kernels.cu" "$work/split-before.cu"
"$kblaster" optimize "$work/split/saxpy_kernels.cu" --kernel saxpy "${own[@]}" --no-llm --breadth 2 --depth 2 --iterations 1 --seed 1 \
  --kb "$work/split.sqlite" --out "$work/split-run" --apply -- 1000000 > "$work/split-run.log" 2>&1
rc=$?
grep -v "^kblaster optimize: \[" "$work/split-run.log" | tail -8
if grep -q "re-captures to the same outputs" "$work/split-run.log"; then
  ! cmp -s "$work/split-before.cu" "$work/split/saxpy_kernels.cu" && [[ -f "$work/split-run/saxpy_kernels.cu.orig" ]]
  check "its best rewrite, built by its own build, re-captures to the same outputs and is applied (rc=$rc)" $?
else
  cmp -s "$work/split-before.cu" "$work/split/saxpy_kernels.cu" && [[ $rc == 0 ]]
  check "nothing applied, and the file is as it was (rc=$rc)" $?
fi
(cd "$work/split" && ./split_app 1000) > "$work/split-after.out" 2>&1; rc=$?
echo "  the program after: rc=$rc $(cat "$work/split-after.out")"
[[ $rc == 0 ]]; check "the program still builds and runs afterwards" $?
"$kblaster" capture "$work/split/saxpy_kernels.cu" --kernel saxpy --build "bash build.sh static" --run ./split_app -- 1000 \
  > /dev/null 2> "$work/split-static.err"
rc=$?
echo "  statically linked: $(tail -1 "$work/split-static.err")"
[[ $rc != 0 ]] && grep -q "cudart shared" "$work/split-static.err"; check "a statically linked program is refused saying how to build it" $?

# The same from an editor: Optimize on the program's kernel through the daemon (LSP on stdio).
cp "$here/programs/row_reduce.cu" "$work/editor_row_reduce.cu"
python3 "$here/gpu_editor_program.py" "$kblaster" "$work/editor_row_reduce.cu" row_sum 2048 1000 > "$work/editor.log" 2>&1
rc=$?
grep -v "progress: iteration" "$work/editor.log" | tail -12
check "Optimize from the editor on a program's kernel" $rc

# A rewrite carried back into the program is model-written: its re-capture runs in the sandbox.
# The probe program tries to write outside the capture folder and to connect to a loopback
# server; unsandboxed both work (the probes themselves work), sandboxed both fail, and the
# capture succeeds either way.
port=$((20000 + RANDOM % 20000))
python3 -m http.server "$port" --bind 127.0.0.1 > /dev/null 2>&1 &
server=$!
sleep 1
for mode in plain sandboxed; do
  flag=(); [[ $mode == sandboxed ]] && flag=(--sandboxed)
  rm -f "$work/escaped-$mode"
  "$kblaster" capture "$here/programs/escape_probe.cu" --kernel fill "${flag[@]}" --json -- "$work/escaped-$mode" "$port" \
    > "$work/escape-$mode.json" 2> "$work/escape-$mode.err"
  rc=$?
  echo "  escape probe, $mode: capture rc=$rc, $(grep -c . "$work/escape-$mode.err") lines; file $( [[ -e $work/escaped-$mode ]] && echo WRITTEN || echo absent)"
  said=$(python3 -c "import json; print(json.load(open('$work/escape-$mode.json'))['program_output'].replace(chr(10), '; '))" 2>/dev/null)
  echo "    the program said: $said"
  if [[ $mode == plain ]]; then
    [[ $rc == 0 && -e $work/escaped-$mode && $said == *CONNECTED* ]]; check "unsandboxed, the probes write and connect (they work)" $?
  else
    [[ $rc == 0 && ! -e $work/escaped-$mode && $said == *denied* && $said == *refused* ]]
    check "sandboxed, the capture works while writing outside its folder and connecting are refused" $?
  fi
done
kill $server 2>/dev/null

echo "capture gpu test: $failures failure(s)"
exit $((failures > 0))
