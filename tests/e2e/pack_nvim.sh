#!/usr/bin/env bash
# Packs this machine's Neovim (Debian 12's 0.7.2: the binary, the shared libraries it needs
# beyond glibc, and its runtime files without docs, spell files and most syntax files) into
# .gpu-nvim/ (ignored: add "/.gpu-nvim/" to .git/info/exclude) so that a machine without Neovim,
# such as the GPU machine, can run tests/e2e/gpu_editor_test.sh. About 11 MB.
#   tests/e2e/pack_nvim.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/.gpu-nvim
nvim=$(command -v nvim) || { echo "pack_nvim: no nvim here (apt-get install neovim)" >&2; exit 1; }
rm -rf "$dest"
mkdir -p "$dest/lib"
cp "$nvim" "$dest/nvim"
ldd "$nvim" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
  case $(basename "$lib") in libc.so.*|libm.so.*|libgcc_s.so.*|ld-linux*) ;; *) cp -L "$lib" "$dest/lib/" ;; esac
done
cp -a /usr/share/nvim/runtime "$dest/runtime"
(cd "$dest/runtime" && rm -rf doc spell keymap tutor indent print pack plugin/matchit.vim &&
  find syntax -type f ! -name syntax.vim ! -name synload.vim ! -name nosyntax.vim ! -name c.vim ! -name cpp.vim ! -name cuda.vim -delete)
# A wrapper that finds its libraries and runtime wherever the folder lands.
cat >"$dest/nvim-run" <<'SH'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
VIMRUNTIME=$here/runtime LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/nvim" "$@"
SH
chmod +x "$dest/nvim-run"
grep -qx '/.gpu-nvim/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-nvim/' >>"$root/.git/info/exclude"
du -sh "$dest"
