// The library folders an executable names for itself (its ELF DT_RUNPATH, or the older
// DT_RPATH), read from its headers without running it: where the sandbox finds the LibTorch
// the harness was linked against, wherever PyTorch is installed (a site-packages folder, a venv,
// /opt), without hard-coding a Python's layout.
#pragma once

#include <filesystem>
#include <vector>

namespace kblaster::support {

/// The folders of `file`'s RUNPATH (or RPATH), $ORIGIN expanded to its folder, in order; empty
/// when it names none or is no 64-bit ELF file. Never throws.
std::vector<std::filesystem::path> elf_runpath(const std::filesystem::path& file);

}  // namespace kblaster::support
