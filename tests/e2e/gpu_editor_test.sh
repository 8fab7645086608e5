#!/usr/bin/env bash
# Optimize in the editor against a live GPU, in one command on the GPU machine: the same
# headless Neovim session as e2e.neovim_optimize (tests/e2e/nvim_optimize.lua), but measured by
# the real kblaster-harness and ncu instead of replayed, on two examples (vector_add and
# row_softmax; KBLASTER_E2E_TASKS to change). The model is still the answer book (the GPU
# machine reaches no model).
#   tests/e2e/gpu_editor_test.sh [KBLASTER] [OUT_DIR]
# KBLASTER defaults to .gpu-bin/kblaster (a stripped build carried to the machine). The harness
# is built by tools/gpu/build_harness.sh (/tmp/kblaster-harness-gpu), unless
# KBLASTER_GPU_HARNESS names one. Neovim: `nvim` on the PATH, else the copy packed here by
# tests/e2e/pack_nvim.sh into .gpu-nvim/ (carry that folder); without either, the same session
# through vscode-jsonrpc with node (tests/e2e/vscode_client.js --live) if node is there.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kblaster=$(realpath "${1:-$root/.gpu-bin/kblaster}")
out=${2:-$root/build-editor-gpu}
mkdir -p "$out"
[[ -x $kblaster ]] || { echo "gpu_editor_test: no kblaster at $kblaster" >&2; exit 2; }
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader || { echo "gpu_editor_test: no GPU" >&2; exit 2; }
if [[ ! -f /usr/include/dlpack/dlpack.h && -d $root/.gpu-deps/include ]]; then
  export KBLASTER_DLPACK_INCLUDE=$root/.gpu-deps/include
fi
if [[ -z ${KBLASTER_GPU_HARNESS:-} ]]; then
  KBLASTER_GPU_HARNESS=$("$root/tools/gpu/build_harness.sh" 2>"$out/harness.log" | tail -1)
fi
[[ -x $KBLASTER_GPU_HARNESS ]] || { echo "gpu_editor_test: no harness at $KBLASTER_GPU_HARNESS"; tail -30 "$out/harness.log"; exit 1; }
export KBLASTER_HARNESS=$KBLASTER_GPU_HARNESS KBLASTER_BINARY=$kblaster KBLASTER_E2E_LIVE=1
export KBLASTER_E2E_TASKS=${KBLASTER_E2E_TASKS:-"$root/examples/tasks/vector_add $root/examples/tasks/row_softmax"}
export KBLASTER_E2E_KEEP=1 XDG_CACHE_HOME=$out/cache XDG_STATE_HOME=$out/state TMPDIR=$out
if command -v nvim >/dev/null; then nvim=(nvim)
elif [[ -x $root/.gpu-nvim/nvim-run ]]; then nvim=("$root/.gpu-nvim/nvim-run")
else nvim=()
fi
if ((${#nvim[@]})); then
  echo "gpu_editor_test: Neovim $("${nvim[@]}" --version | head -1) on $KBLASTER_E2E_TASKS"
  "${nvim[@]}" --headless --clean -u "$root/tests/e2e/nvim_optimize.lua" 2>&1 | tee "$out/neovim.log"
  exit "${PIPESTATUS[0]}"
elif command -v node >/dev/null && [[ -d $root/tests/e2e/node_modules/vscode-jsonrpc ]]; then
  echo "gpu_editor_test: no Neovim here; the vscode-jsonrpc session with $(node --version)"
  tasks=()
  for t in $KBLASTER_E2E_TASKS; do tasks+=(--optimize-task "$t"); done
  node "$root/tests/e2e/vscode_client.js" --binary "$kblaster" --live "${tasks[@]}" 2>&1 | tee "$out/vscode.log"
  exit "${PIPESTATUS[0]}"
fi
echo "gpu_editor_test: neither Neovim (nvim, or .gpu-nvim from tests/e2e/pack_nvim.sh) nor node with tests/e2e/node_modules" >&2
exit 2
