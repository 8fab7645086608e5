// Renderings of a classified kernel instance: a compact text summary for LLM prompts (well
// under 1,500 tokens), a human report for the terminal, and JSON for tools and the editor.
#pragma once

#include "engine/state/performance_signature.h"
#include "engine/profile/source_attribution.h"
#include "engine/state/state_naming.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kblaster::engine {

/// Everything shown about one kernel instance.
struct kernel_view {
  performance_signature signature;
  named_state state;
  std::vector<hot_line> hot_lines;  // empty without a -lineinfo source page
};

/// Compact, prompt-ready text; capped at `max_chars` (about 4 characters per token).
std::string summarize_for_prompt(const kernel_view& v, std::size_t max_chars = 5000);

/// The report an engineer reads in a terminal: state, evidence, top findings, lines that hurt.
std::string render_human(const kernel_view& v);

/// "grid (64, 1, 1) x block (256, 1, 1), 32 registers/thread, 4.0 KiB shared/block"; empty
/// when the profile did not record the launch.
std::string launch_text(const launch_config& launch);

/// "DRAM 2.59 TB/s of 3.35 TB/s (77%); FP32 0.23 of 53.2 TFLOP/s (0.4%)": achieved rates
/// against the GPU's peaks; empty when the profile has no roofline figures.
std::string achieved_rates_text(const sol_figures& f);

/// "NVIDIA H100 80GB HBM3 (compute capability 9.0), 132 SMs, 50 MiB L2, 228 KiB shared memory per
/// SM (227 KiB per block opted in), 65536 registers per SM": the device as ncu queried it; empty
/// when the profile has no device attributes.
std::string device_text(const device_facts& d);

/// JSON with at least "name", "primary" and "secondary" (a list of names), plus evidence,
/// speed-of-light figures, findings, hot lines, the KB state and what is unknown.
nlohmann::json to_json(const kernel_view& v);

}  // namespace kblaster::engine
