#!/usr/bin/env bash
# Runs a command beside a throwaway PostgreSQL server: a cluster in a fresh temporary folder,
# listening on a Unix socket in that folder only (listen_addresses='': no TCP port, so tests run
# in parallel without clashes), stopped and removed when the command ends, even on failure.
#
#   pg_cluster.sh COMMAND [ARGS...]
#
# The command sees:
#   KBLASTER_TEST_PG_URI    postgresql:// URI of an empty database "kb" on the server
#   KBLASTER_TEST_PG_HOST   the server's socket folder, and KBLASTER_TEST_PG_USER its superuser:
#                           tests create databases of their own (tests/unit/kb/kb_test_util.h)
#   KBLASTER_TEST_PG_CTL    a script taking pg_ctl's verbs (stop, start, restart) for this server
# Exit status: the command's; 77 (ctest's skip) when PostgreSQL's server binaries are missing.
# PostgreSQL refuses to run as root: as root (CI), the server runs as `nobody`.
set -euo pipefail

bindir=${KBLASTER_PG_BINDIR:-}
if [[ -z "$bindir" ]]; then
  for d in /usr/lib/postgresql/*/bin; do [[ -x "$d/initdb" ]] && bindir=$d; done
fi
if [[ -z "$bindir" || ! -x "$bindir/initdb" ]]; then
  echo "pg_cluster.sh: no PostgreSQL server (initdb) found; install postgresql (scripts/install-deps)" >&2
  exit 77
fi

dir=$(mktemp -d /tmp/kblaster-pg-XXXXXX)
as_server=()
server_user=$(id -un)
if [[ $(id -u) -eq 0 ]]; then
  server_user=nobody
  as_server=(runuser -u nobody --)
  chown nobody "$dir"
fi
chmod 0755 "$dir"  # the client (root) and the server (nobody) both reach the socket

cleanup() {
  "${as_server[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"${as_server[@]}" "$bindir/initdb" -D "$dir/data" -U "$server_user" --auth=trust --no-locale -E UTF8 \
  >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
cat >"$dir/pg_ctl.sh" <<SCRIPT
#!/usr/bin/env bash
# pg_ctl for the throwaway server of pg_cluster.sh: pg_ctl.sh stop|start|restart
exec ${as_server[*]} "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -m fast \
  -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off" "\$@"
SCRIPT
chmod 0755 "$dir/pg_ctl.sh"
"$dir/pg_ctl.sh" start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
"$bindir/createdb" -h "$dir" -U "$server_user" kb

export KBLASTER_TEST_PG_HOST="$dir" KBLASTER_TEST_PG_USER="$server_user"
export KBLASTER_TEST_PG_URI="postgresql:///kb?host=$dir&user=$server_user"
export KBLASTER_TEST_PG_CTL="$dir/pg_ctl.sh"
status=0
"$@" || status=$?
if [[ $status -ne 0 && -f "$dir/server.log" ]]; then
  echo "--- server log (last 30 lines) ---" >&2
  tail -n 30 "$dir/server.log" >&2
fi
exit $status
