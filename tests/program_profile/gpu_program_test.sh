#!/usr/bin/env bash
# On the GPU machine (ctest label gpu): the program's profile and Optimize the program, live.
#   1. `kblaster profile` on the two example programs: the table comes first with the dominant
#      kernel on top, and it costs less than profiling every launch (--no-timeline);
#   2. `kblaster optimize rowsum_loop.cu --program --no-llm`: the plan puts relu_rowsum first and
#      states the Amdahl bound before anything runs; the report's figures hold together; when a
#      rewrite was kept, its end-to-end figure agrees within 5 % with an independent alternating
#      re-measure of the original and the optimized program (built alike, run by this script).
# Prints the figures it checks.   usage: gpu_program_test.sh KBLASTER OUTDIR
set -uo pipefail
kblaster=${1:?usage: gpu_program_test.sh KBLASTER OUTDIR}
out=${2:?usage: gpu_program_test.sh KBLASTER OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
programs=$root/tests/fixtures/programs
rm -rf "$out" && mkdir -p "$out"
failures=0
check() {  # CONDITION-STATUS MESSAGE
  if [[ $1 == 0 ]]; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi
}

# 1. The profile, with and without the timeline.
cp "$programs/relu_rowsum/relu_rowsum.cu" "$out/"
started=$SECONDS
(cd "$out" && "$kblaster" profile relu_rowsum.cu -- 4096 2048 8) > "$out/profile.txt" 2> "$out/profile.log"
with_timeline=$((SECONDS - started))
started=$SECONDS
(cd "$out" && "$kblaster" profile relu_rowsum.cu --no-timeline -- 4096 2048 8) > "$out/every.txt" 2>&1
every_launch=$((SECONDS - started))
head -6 "$out/profile.txt"
head -1 "$out/profile.txt" | grep -q '^kernel *launches *total *mean *share *headroom'; check $? "the table comes first"
sed -n 2p "$out/profile.txt" | grep -q '^relu_rowsum '; check $? "relu_rowsum, the dominant kernel, is the table's first row"
grep -q '^program: GPU busy' "$out/profile.txt"; check $? "the program's line: GPU busy and idle time"
echo "profile: ${with_timeline} s with the timeline, ${every_launch} s profiling every launch"
[[ $with_timeline -le $every_launch ]]; check $? "the timeline's profile costs no more than every launch under ncu"

# 2. Optimize the program, and an independent re-measure of what it reports.
args="4096 4096 2000"
cp "$programs/rowsum_loop/rowsum_loop.cu" "$out/"
"$kblaster" optimize "$out/rowsum_loop.cu" --program --no-llm --breadth 4 --depth 2 --iterations 1 --json \
  --out "$out/run" -- $args > "$out/program.json" 2> "$out/program.log"
check $? "optimize --program finished"
grep -m1 "^kblaster optimize: plan: relu_rowsum" "$out/program.log"; check $? "the plan puts relu_rowsum first"
grep -q "Amdahl bound" "$out/program.log"; check $? "the Amdahl bound is said"
python3 - "$out" $args <<'PY'
import json, pathlib, statistics, subprocess, sys, time
out = pathlib.Path(sys.argv[1]); args = sys.argv[2:]
report = json.loads((out / "program.json").read_text())
turns = report["turns"]
for t in turns:
    print(f"turn {t['kernel']}: {t['status']}, harness {t['harness_speedup']:.2f}x, "
          f"end to end {t.get('end_to_end_speedup', {}).get('median', '-')}")
assert turns and turns[0]["kernel"] == "relu_rowsum", "the first turn is relu_rowsum's"
if not report["improved"]:
    print("ok: no rewrite kept; the program is unchanged and nothing is claimed end to end")
    sys.exit(0)
total = report["end_to_end"]["speedup"]
print(f"reported end to end: {total['median']:.3f}x ({total['low']:.3f}-{total['high']:.3f}, {total['pairs']} pairs)")
for name, source in (("orig", out / "rowsum_loop.cu"), ("opt", out / "run" / "rowsum_loop.cu")):
    subprocess.run(["nvcc", "-O3", "-arch=native", "-o", str(out / name), str(source)], check=True)
def run(p):
    t = time.perf_counter(); subprocess.run([str(out / p)] + args, check=True, capture_output=True); return time.perf_counter() - t
ratios = []
for i in range(10):
    a, b = (run("orig"), run("opt")) if i % 2 == 0 else tuple(reversed((run("opt"), run("orig"))))
    ratios.append(a / b)
again = statistics.median(ratios)
print(f"independent re-measure: {again:.3f}x over 10 alternating pairs")
assert abs(again - total["median"]) / again <= 0.05, "the reported end-to-end figure is within 5 % of the re-measure"
print("ok: the reported end-to-end figure agrees with the re-measure within 5 %")
PY
check $? "the report holds together with an independent re-measure"
[[ $failures == 0 ]] && echo "all passed" || echo "FAILED: $failures"
exit $((failures > 0))
