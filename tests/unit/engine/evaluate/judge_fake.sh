#!/usr/bin/env bash
# A stand-in for kblaster-harness in the live evaluator's unit tests (no LibTorch needed): answers
# ping and evaluate as the judge does, and misbehaves as the candidate library's marker string
# says (the evaluator builds the candidate; this reads its bytes, never loads it):
#   judge:killed    the harness itself is killed by SIGKILL mid-request (the machinery's failure)
#   judge:oom       the harness replies that its own memory ran out ("judge_error": true)
#   runner:killed   the candidate's runner died of SIGKILL: the harness replies, the candidate's verdict
#   (none)          pass, with timings
# Written for KernelBlaster's tests.
echo '{"event":"ready","device":"fake judge","cuda":false}'
while IFS= read -r line; do
  id=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' <<<"$line")
  case "$line" in
    *'"op":"shutdown"'*) exit 0 ;;
    *'"op":"ping"'*) echo "{\"id\":$id,\"ok\":true,\"device\":\"fake judge\"}"; continue ;;
  esac
  lib=$(sed -n 's/.*"candidate":"\([^"]*\)".*/\1/p' <<<"$line")
  if grep -qa 'judge:killed' "$lib"; then
    echo "fake judge: killed while the candidate ran" >&2
    kill -KILL $$
  elif grep -qa 'judge:oom' "$lib"; then
    echo "{\"id\":$id,\"verdict\":\"error\",\"check\":\"out_of_memory\",\"reason\":\"CUDA out of memory allocating the judge's copy of output 0\",\"judge_error\":true}"
  elif grep -qa 'runner:killed' "$lib"; then
    echo "{\"id\":$id,\"verdict\":\"error\",\"check\":\"out_of_memory\",\"reason\":\"the candidate's runner died of signal 9 (Killed) during call 1 (out of memory?); the harness goes on\"}"
  else
    echo "{\"id\":$id,\"verdict\":\"pass\",\"seeds\":3,\"timing\":{\"candidate\":{\"median_ms\":0.5},\"reference\":{\"median_ms\":1.0}},\"seconds\":{\"verify\":0.01,\"time\":0.02}}"
  fi
done
