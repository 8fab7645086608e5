#!/usr/bin/env bash
# The merge step of a Slurm bench: runs after every array task ended (afterany) and writes the
# report over the shared run directory. Arguments: KBLASTER RUN_DIR
set -euo pipefail
exec "$1" bench report "$2"
