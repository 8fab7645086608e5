// Writing a capture's task folder.
#include "engine/capture/capture_task.h"
#include "engine/source/kernel_parameters.h"
#include "support/files.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>

namespace kblaster::engine {

namespace fs = std::filesystem;

namespace {

// The sm_XY of a compute capability "9.0".
std::string arch_of(const std::string& cc) {
  std::string digits;
  for (const char c : cc)
    if (c != '.') digits += c;
  return digits.empty() ? "" : "sm_" + digits;
}

// A task name (run folders are named after it): the kernel's name, scopes as '_'.
std::string task_name(const std::string& kernel) {
  std::string out;
  for (const char c : kernel) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  return out.empty() ? "kernel" : out;
}

}  // namespace

const cuda_symbol* captured_kernel_symbol(const std::vector<cuda_symbol>& symbols, const kernel_capture& capture) {
  const cuda_symbol* best = nullptr;
  for (const auto& s : symbols) {
    if (s.kind != cuda_symbol_kind::global_kernel || !s.is_definition) continue;
    if (s.qualified_name != capture.requested && s.name != capture.requested) continue;
    if (parameters_of(s.signature).size() == capture.params.size()) return &s;
    if (!best) best = &s;
  }
  return best;
}

capture_task write_capture_task(const kernel_capture& capture, const std::string& program_source,
                                const std::string& provenance) {
  if (capture.refusal) throw capture_error(capture.refusal->message);
  const auto symbols = locate_cuda_symbols(program_source);
  const auto* kernel = captured_kernel_symbol(symbols, capture);
  if (!kernel) throw capture_error("the program's source defines no kernel " + capture.requested + " (captured: " + capture.name + ")");

  capture_task out;
  out.kernel = *kernel;
  out.views = allocation_views(capture, *kernel);
  out.dir = (fs::path(capture.dir) / "task").string();
  const fs::path dir = out.dir;
  fs::create_directories(dir);

  // The program up to the kernel's end: its includes, helpers and the kernel itself; main and
  // whatever follows the kernel stay out of the candidate.
  const std::string source = program_source.substr(0, kernel->full_range.end) + "\n" +
                             generate_launcher(capture, *kernel, provenance);
  out.kernel_path = (dir / "kernel.cu").string();
  out.reference_path = (dir / "reference.cu").string();
  support::write_file_atomically(out.kernel_path, source);
  support::write_file_atomically(out.reference_path, source);

  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (std::size_t a = 0; a < out.views.size(); ++a) {
    const auto& v = out.views[a];
    inputs.push_back({{"name", v.name},
                      {"file", fs::path(capture.allocations[a].before).lexically_relative(dir).string()},
                      {"shape", {v.elements}},
                      {"dtype", v.dtype}});
    if (v.output >= 0) outputs.push_back({{"name", v.name}, {"shape", {v.elements}}, {"dtype", v.dtype}});
  }
  if (outputs.empty()) throw capture_error("the captured launch of " + capture.name + " changed no memory: there is nothing to verify a rewrite against");
  if (capture.hidden_pointers)
    out.notes.push_back("a by-value struct parameter holds device pointers: the launcher moves them to the replay's memory");
  nlohmann::json task{
      {"name", task_name(capture.requested)},
      {"description", capture.name + ", " + provenance + ", captured on " + capture.device_name + " (" +
                          std::to_string(capture.time_ms) + " ms in the program)"},
      {"kernel", "kernel.cu"},
      {"reference", {{"kernel", "reference.cu"}}},
      {"inputs", inputs},
      {"outputs", outputs},
      {"seeds", 1},
      {"stress",
       {{"skip", {"large_magnitude", "near_limits"}},
        {"reason", "a capture replays the program's own memory; other values may be outside what the program can "
                   "produce (indices, sizes, bins)"}}},
  };
  if (const auto arch = arch_of(capture.compute_capability); !arch.empty()) task["arch"] = arch;
  support::write_file_atomically(dir / "task.json", task.dump(2) + "\n");
  return out;
}

}  // namespace kblaster::engine
