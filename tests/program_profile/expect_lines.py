#!/usr/bin/env python3
"""Runs a command and checks that its stdout holds the given lines, each whole, in this order
(other lines may come between); an expected line ending in "..." matches a line that starts with
the rest (recorded figures vary): expect_lines.py EXPECTED_FILE -- COMMAND ARGS..."""
import subprocess
import sys

expected_file, command = sys.argv[1], sys.argv[sys.argv.index("--") + 1:]
expected = [line for line in open(expected_file, encoding="utf-8").read().splitlines() if line and not line.startswith("#")]
run = subprocess.run(command, capture_output=True, text=True, timeout=120)
got = run.stdout.splitlines()
def matches(want, line):
    return line.startswith(want[:-3]) if want.endswith("...") else line == want


at = 0
for want in expected:
    while at < len(got) and not matches(want, got[at]):
        at += 1
    if at == len(got):
        sys.exit(f"missing (or out of order): {want!r}\n--- stdout ---\n{run.stdout}--- stderr ---\n{run.stderr}")
    at += 1
sys.exit(run.returncode)
