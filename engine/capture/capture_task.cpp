// Writing a capture's task folder.
#include "engine/capture/capture_task.h"
#include "engine/capture/capture_variation.h"
#include "engine/source/kernel_parameters.h"
#include "engine/task/task.h"
#include "support/files.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstdio>
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

std::string scientific(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

// An output on which the original gives different results from run to run: its tolerance in the
// task (only what differs from the dtype's default, which the harness applies anyway) and a note
// saying so. Refuses what no tolerance can cover: a bit-exact dtype, a NaN or an infinity in one
// run only. `label` is "output 0 (out, parameter 1)".
void widen_for_variation(const kernel_capture& capture, std::size_t a, const allocation_view& view, const std::string& label,
                         nlohmann::json& output, std::vector<std::string>& notes) {
  const auto v = variation_of(capture.allocations[a], view.dtype);
  const std::string varies = "the original " + capture.name + " gives different results from run to run: run twice on the same memory";
  if (!is_floating_dtype(view.dtype))
    throw capture_error(varies + ", it left " + std::to_string(v.differing) + " of " + std::to_string(v.elements) + " elements of " +
                        label + " (allocation " + std::to_string(a) + ") different (first at [" + std::to_string(v.first) + "]: " +
                        v.first_value + ", then " + v.second_value + "); " + view.dtype +
                        " is compared bit for bit, so no rewrite could be verified against it");
  if (!v.within_tolerance)
    throw capture_error(varies + ", element [" + std::to_string(v.first_nonfinite) + "] of " + label + " (allocation " +
                        std::to_string(a) + ") came out " + v.nonfinite_values +
                        ": no tolerance covers a NaN or an infinity in one run only, so no rewrite could be verified against it");
  const auto dtype_default = tolerance_for(view.dtype, task_spec{});
  const auto tol = varying_tolerance(view.dtype, v);
  std::string note = "the original varies between two runs on " + label + ": " + std::to_string(v.differing) + " of " +
                     std::to_string(v.elements) + " elements differ";
  if (v.max_abs == 0) {
    notes.push_back(note + ", only in the sign of zeros or in NaN bits, which compare equal; its tolerance stays");
    return;
  }
  note += ", by up to " + scientific(v.max_abs);
  std::vector<std::string> widened;
  if (tol.atol > dtype_default.atol) {
    output["atol"] = tol.atol;
    widened.push_back("atol is widened to " + scientific(tol.atol));
  }
  if (tol.rtol > dtype_default.rtol) {
    output["rtol"] = tol.rtol;
    widened.push_back("rtol is widened to " + scientific(tol.rtol) + " (the runs differ by " + scientific(v.relative_l2) +
                      " in relative L2)");
  }
  if (widened.empty()) note += ", within " + view.dtype + "'s tolerance (atol " + scientific(dtype_default.atol) + "), which stays";
  else note += "; its " + widened[0] + (widened.size() > 1 ? " and its " + widened[1] : "") + " for that output only";
  notes.push_back(note);
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
                                const std::string& provenance, const std::string& name) {
  if (capture.refusal) throw capture_error(capture.refusal->message);
  const auto symbols = locate_cuda_symbols(program_source);
  const auto* kernel = captured_kernel_symbol(symbols, capture);
  if (!kernel) throw capture_error("the program's source defines no kernel " + capture.requested + " (captured: " + capture.name + ")");

  capture_task out;
  out.name = name.empty() ? task_name(capture.requested) : name;
  out.kernel = *kernel;
  out.views = allocation_views(capture, *kernel);
  out.dir = (fs::path(capture.dir) / "task").string();
  const fs::path dir = out.dir;

  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  for (std::size_t a = 0; a < out.views.size(); ++a) {
    const auto& v = out.views[a];
    inputs.push_back({{"name", v.name},
                      {"file", fs::path(capture.allocations[a].before).lexically_relative(dir).string()},
                      {"shape", {v.elements}},
                      {"dtype", v.dtype}});
    if (v.output < 0) continue;
    // The launch starts from the program's contents of what it writes: the harness puts them
    // there before every call, outside the timed region (the launcher no longer copies them).
    nlohmann::json output{{"name", v.name}, {"shape", {v.elements}}, {"dtype", v.dtype}, {"initial_from", a}};
    if (capture.allocations[a].varies)
      widen_for_variation(capture, a, v, "output " + std::to_string(v.output) + " (" + v.name + ")", output, out.notes);
    outputs.push_back(std::move(output));
  }
  if (outputs.empty()) throw capture_error("the captured launch of " + capture.name + " changed no memory: there is nothing to verify a rewrite against");

  // The program up to the kernel's end: its includes, helpers and the kernel itself; main and
  // whatever follows the kernel stay out of the candidate.
  const std::string source = program_source.substr(0, kernel->full_range.end) + "\n" +
                             generate_launcher(capture, *kernel, provenance);
  // Nothing is written before the task is known to be verifiable and its launcher expressible.
  fs::create_directories(dir);
  out.kernel_path = (dir / "kernel.cu").string();
  out.reference_path = (dir / "reference.cu").string();
  support::write_file_atomically(out.kernel_path, source);
  support::write_file_atomically(out.reference_path, source);
  if (capture.determinism && !capture.determinism->checked)
    out.notes.push_back("whether the original gives the same results from run to run was not checked (" + capture.determinism->reason +
                        "): if it does not, it may fail verification against itself");
  if (capture.hidden_pointers)
    out.notes.push_back("a by-value struct parameter holds device pointers: the launcher moves them to the replay's memory");
  nlohmann::json task{
      {"name", out.name},
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
