#!/usr/bin/env bash
# `kblaster kb` and `kblaster doctor` with a team server (run by pg_cluster.sh, which sets
# KBLASTER_TEST_PG_URI): export a file KB, import it on the server, export it there, import that
# into a new file: the three exports are identical. The password of a URI never shows.
set -euo pipefail
kblaster=$1
uri=${KBLASTER_TEST_PG_URI:?run me through tests/kb/pg_cluster.sh}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$kblaster" kb init --kb "$dir/a.sqlite" >/dev/null
"$kblaster" kb export "$dir/a.json" --kb "$dir/a.sqlite" >/dev/null
"$kblaster" kb import "$dir/a.json" --kb "$uri" >/dev/null
"$kblaster" kb export "$dir/b.json" --kb "$uri" >/dev/null
cmp -s "$dir/a.json" "$dir/b.json" || fail "file -> server: the server's export differs"
"$kblaster" kb import "$dir/b.json" --kb "$dir/c.sqlite" >/dev/null
"$kblaster" kb export "$dir/c.json" --kb "$dir/c.sqlite" >/dev/null
cmp -s "$dir/a.json" "$dir/c.json" || fail "server -> file: the file's export differs"

# The server's statistics name the backend and who taught it; a password is redacted.
secret_uri=${uri/postgresql:\/\//postgresql://$KBLASTER_TEST_PG_USER:s3cret@}
out=$(KBLASTER_KB_USER=carol "$kblaster" kb stats --kb "$secret_uri" --json)
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["backend"] == "postgresql", d; assert d["updates_by_user"].get("carol", 0) == 0' \
  || fail "kb stats on the server"
echo "$out" | grep -q s3cret && fail "kb stats shows the password"
"$kblaster" kb stats --kb "$uri" | grep -q "^backend        postgresql" || fail "kb stats names the backend"
python3 - "$dir/a.json" "$dir/d.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["undersized_grid"]["lessons"].append({"text": "Carol's lesson.", "technique": "", "arch": "all", "provenance": "pg cli test"})
json.dump(d, open(sys.argv[2], "w"))
PY
KBLASTER_KB_USER=carol "$kblaster" kb import "$dir/d.json" --kb "$uri" >/dev/null
"$kblaster" kb stats --kb "$uri" --json | python3 -c 'import json,sys; assert json.load(sys.stdin)["updates_by_user"]["carol"] >= 1' \
  || fail "an import is attributed to KBLASTER_KB_USER"

# doctor: the backend, and whether the server answers (and no password).
doc=$("$kblaster" doctor --kb "$secret_uri" || true)
echo "$doc" | grep -q "backend   postgresql" || fail "doctor names the backend"
echo "$doc" | grep -q "server    reachable; schema version" || fail "doctor reaches the server"
echo "$doc" | grep -q s3cret && fail "doctor shows the password"
down=$("$kblaster" doctor --kb "postgresql:///kb?host=$dir/nowhere" || true)
echo "$down" | grep -q "server    NOT reachable" || fail "doctor reports an unreachable server"
echo "kb_pg_cli: ok"
