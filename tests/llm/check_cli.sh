#!/usr/bin/env bash
# `kblaster llm check` end to end: against a cassette served by `kblaster llm serve-cassette`
# (exit 0, answer shown), against nothing listening (exit 1), and with a key variable that is
# unset on a remote URL (exit 1, the variable named). The key's value never appears.
set -euo pipefail
kblaster=$1
cassette=$2
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT

"$kblaster" llm serve-cassette "$cassette" >"$tmp/url" 2>"$tmp/serve.log" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/url" ] && break; sleep 0.1; done
url=$(head -1 "$tmp/url")
[ -n "$url" ] || { echo "serve-cassette printed no URL"; cat "$tmp/serve.log"; exit 1; }

export KBLASTER_CHECK_KEY=sk-checkscript-SECRET-0123456789
XDG_CONFIG_HOME=$tmp "$kblaster" llm check --llm-base-url "$url" --llm-key-env KBLASTER_CHECK_KEY --llm-model m1 >"$tmp/ok.txt"
grep -q '^ok: openai endpoint' "$tmp/ok.txt"
grep -q 'answer: OK' "$tmp/ok.txt"
if grep -q SECRET "$tmp/ok.txt"; then echo "key printed"; exit 1; fi

# Nothing listens on port 1: exit status 1 and a readable error.
if XDG_CONFIG_HOME=$tmp "$kblaster" llm check --llm-base-url http://127.0.0.1:1/v1 --timeout 2 2>"$tmp/err.txt"; then
  echo "check passed with no endpoint"; exit 1
fi
grep -q 'kblaster llm check:' "$tmp/err.txt"

# A remote URL with an unset key variable names the variable.
if XDG_CONFIG_HOME=$tmp KBLASTER_LLM_KEY_ENV=KBLASTER_UNSET_KEY "$kblaster" llm check --llm-base-url https://api.invalid/v1 2>"$tmp/err2.txt"; then
  echo "check passed without a key"; exit 1
fi
grep -q 'KBLASTER_UNSET_KEY' "$tmp/err2.txt"
echo "llm check CLI: ok"
