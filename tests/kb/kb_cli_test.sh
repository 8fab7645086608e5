#!/usr/bin/env bash
# `kblaster kb ...` end to end: init/stats/states/show/select/match, export -> import -> export
# identity, history and revert, and the errors for bad files given with --kb.
set -euo pipefail
kblaster=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
err_out() { "$kblaster" "$@" 2>&1 && echo "UNEXPECTED SUCCESS" || true; }  # output of a command that must fail

kb="$dir/kb.sqlite"
"$kblaster" kb init --kb "$kb" | grep -q "KB ready" || fail "init"
[ "$("$kblaster" kb stats --kb "$kb" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["states"])')" -ge 14 ] || fail "stats --json"
"$kblaster" kb states --kb "$kb" | grep -q "^uncoalesced_global_memory" || fail "states"
"$kblaster" kb show uncoalesced_global_memory --kb "$kb" | grep -q memory_coalescing || fail "show"
"$kblaster" kb select uncoalesced_global_memory -k 2 --seed 3 --kb "$kb" --json | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) == 2' || fail "select"
[ "$("$kblaster" kb select undersized_grid --seed 9 --kb "$kb")" = "$("$kblaster" kb select undersized_grid --seed 9 --kb "$kb")" ] || fail "select is not deterministic"
"$kblaster" kb match memory_bound_dram --secondary uncoalesced_global_access --kb "$kb" | grep -q uncoalesced_global_memory || fail "match"

# Round trip through files.
"$kblaster" kb export "$dir/a.json" --kb "$kb" >/dev/null
"$kblaster" kb import "$dir/a.json" --kb "$dir/b.sqlite" >/dev/null
"$kblaster" kb export "$dir/b.json" --kb "$dir/b.sqlite" >/dev/null
cmp -s "$dir/a.json" "$dir/b.json" || fail "export/import/export differs"

# Import is logged and revertible (a changed prior and a new lesson, so there is a change).
python3 - "$dir/a.json" "$dir/c.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["undersized_grid"]["optimizations"][0]["prior_speedup"] = 2.5
d["undersized_grid"]["lessons"].append({"text": "Split K first.", "technique": "", "arch": "all", "provenance": "cli test"})
json.dump(d, open(sys.argv[2], "w"))
PY
before=$("$kblaster" kb export - --kb "$kb")
id=$("$kblaster" kb import "$dir/c.json" --kb "$kb" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["update_id"])')
"$kblaster" kb history --kb "$kb" | grep -q import || fail "history lists the import"
"$kblaster" kb history --kb "$kb" --show 1 --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["cause"] == "seed"' || fail "history --show"
[ "$id" != 0 ] || fail "import made no update"
"$kblaster" kb show undersized_grid --kb "$kb" | grep -q "Split K first" || fail "imported lesson shown"
"$kblaster" kb history --revert "$id" --kb "$kb" | grep -q reverted || fail "revert"
[ "$("$kblaster" kb export - --kb "$kb")" = "$before" ] || fail "revert did not restore the KB"
err_out kb history --revert 424242 --kb "$kb" | grep -q "no update with id" || fail "revert of a missing id"

# Bad files: clear message, exit status 1, file unchanged.
expect_error() {  # file, expected text
  local sum before out rc=0
  before=$(sha256sum "$1")
  out=$("$kblaster" kb stats --kb "$1" 2>&1) || rc=$?
  [ "$rc" = 1 ] || fail "$1: exit status $rc, want 1 ($out)"
  grep -q "$2" <<<"$out" || fail "$1: message '$out' lacks '$2'"
  [ "$(sha256sum "$1")" = "$before" ] || fail "$1 was modified"
}
echo "hello" > "$dir/text.txt"
expect_error "$dir/text.txt" "not an SQLite database"
python3 -c "import sqlite3; c=sqlite3.connect('$dir/other.db'); c.execute('create table t(x)'); c.commit()"
expect_error "$dir/other.db" "another application"
python3 - "$kb" "$dir/corrupt.sqlite" <<'PY'
import sys
data = bytearray(open(sys.argv[1], 'rb').read())
for i in range(4096 * 2, min(len(data), 4096 * 6)): data[i] = (i * 7) & 0xff
open(sys.argv[2], 'wb').write(data)
PY
expect_error "$dir/corrupt.sqlite" "corrupt"
{ "$kblaster" kb stats --kb "$dir/text.txt" --json 2>/dev/null || true; } | python3 -c 'import json,sys; assert json.load(sys.stdin)["error"]["kind"] == "not_sqlite"' || fail "--json error"
err_out kb show no_such_state --kb "$kb" | grep -q "no state named" || fail "unknown state"
echo '{"s": {"primary_bottleneck": 5}}' > "$dir/bad.json"
err_out kb import "$dir/bad.json" --kb "$kb" | grep -q "must be a string" || fail "bad import"
echo '{not json' > "$dir/broken.json"
err_out kb import "$dir/broken.json" --kb "$kb" | grep -q "not valid JSON" || fail "broken json"

# Default location follows XDG_DATA_HOME.
XDG_DATA_HOME="$dir/xdg" "$kblaster" kb init >/dev/null
[ -f "$dir/xdg/kblaster/kb.sqlite" ] || fail "XDG_DATA_HOME location"
env -u XDG_DATA_HOME HOME="$dir/home" "$kblaster" kb init >/dev/null
[ -f "$dir/home/.local/share/kblaster/kb.sqlite" ] || fail "HOME fallback location"
echo "kb cli: all checks passed"
