#!/usr/bin/env bash
# A stand-in for kblaster-harness in the harness_client unit tests (no LibTorch needed): speaks
# the same JSON lines and misbehaves on request. The request's "candidate" says how:
# ok, crash (SIGSEGV), abort (SIGABRT), kill (SIGKILL), hang, exit, oom (prints bad_alloc, then SIGABRT),
# judge_oom (a reply saying the judge's own memory ran out), noise. FAKE_HARNESS_START_SECONDS
# delays the "ready" line, as LibTorch's load does.
# Written for KernelBlaster's tests.
sleep "${FAKE_HARNESS_START_SECONDS:-0}"
echo '{"event":"ready","device":"fake","cuda":false}'
while IFS= read -r line; do
  id=$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' <<<"$line")
  case "$line" in
    *'"op":"shutdown"'*) exit 0 ;;
    *'"candidate":"crash"'*) kill -SEGV $$ ;;
    *'"candidate":"abort"'*) echo "candidate: assertion failed" >&2; kill -ABRT $$ ;;
    *'"candidate":"oom"'*) echo "terminate called after throwing an instance of 'std::bad_alloc'" >&2; kill -ABRT $$ ;;
    *'"candidate":"kill"'*) kill -KILL $$ ;;
    *'"candidate":"judge_oom"'*) echo "{\"id\":$id,\"verdict\":\"error\",\"check\":\"out_of_memory\",\"judge_error\":true}" ;;
    *'"candidate":"hang"'*) sleep 600 ;;
    *'"candidate":"exit"'*) exit 4 ;;
    *'"candidate":"noise"'*) echo 'not json'; echo '{"id":-5,"verdict":"pass"}'; echo "{\"id\":$id,\"verdict\":\"pass\"}" ;;
    *) echo "{\"id\":$id,\"verdict\":\"pass\",\"pid\":$$}" ;;
  esac
done
