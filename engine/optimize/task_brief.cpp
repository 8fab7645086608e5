// The task's brief for the lowering prompt.
#include "engine/optimize/task_brief.h"
#include "support/files.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>

namespace kblaster::engine::optimize {

namespace {

std::string brief_shape_text(const input_spec& s) {
  std::string out = s.name + ": " + s.dtype + "[";
  for (std::size_t i = 0; i < s.shape.size(); ++i) out += (i ? ", " : "") + std::to_string(s.shape[i]);
  return out + "]";
}

std::string brief_capped(const std::string& text, std::size_t max_chars) {
  if (text.size() <= max_chars) return text;
  return text.substr(0, max_chars) + "\n... (" + std::to_string(text.size() - max_chars) + " more characters)\n";
}

}  // namespace

std::string task_brief(const task_spec& task, const std::string& current_source, std::size_t max_chars) {
  std::ostringstream o;
  if (!task.description.empty()) o << "Task: " << task.description << "\n";
  switch (task.reference.kind) {
    case reference_kind::torchscript_source:
      if (!task.reference.source.empty())
        o << "It must compute what this PyTorch reference computes (TorchScript; the inputs below in order):\n```python\n"
          << brief_capped(task.reference.source, max_chars / 2) << (task.reference.source.ends_with('\n') ? "" : "\n") << "```\n";
      break;
    case reference_kind::kernel: {
      const auto reference = support::read_file_if_exists(task.reference.path).value_or("");
      if (reference.empty() || reference == current_source)
        o << "It must compute what the original kernel computes: the current source below is that original.\n";
      else
        o << "It must compute what this original kernel computes, on the same memory:\n```cuda\n"
          << brief_capped(reference, max_chars / 2) << "```\n";
      break;
    }
    case reference_kind::torchscript_module: {
      // An imported KernelBench problem: its task.json names the problem file, whose Model is
      // what the TorchScript module was exported from.
      std::string problem;
      try {
        const auto j = nlohmann::json::parse(support::read_file_if_exists(std::filesystem::path(task.dir) / "task.json").value_or("{}"));
        if (j.contains("kernelbench") && j["kernelbench"].is_object()) problem = j["kernelbench"].value("problem", "");
      } catch (const nlohmann::json::exception&) {
      }
      const auto model = problem.empty() ? std::string() : support::read_file_if_exists(problem).value_or("");
      if (!model.empty())
        o << "It must compute what this PyTorch Model computes (KernelBench's problem; the inputs below in order):\n```python\n"
          << brief_capped(model, max_chars / 2) << (model.ends_with('\n') ? "" : "\n") << "```\n";
      else
        o << "It must compute what the task's reference module computes (TorchScript, " << task.reference.path << ").\n";
      break;
    }
  }
  if (!task.inputs.empty()) {
    o << "Inputs (verified and timed at these shapes; the kernel must still handle any size its code accepts):";
    for (const auto& i : task.inputs) o << " " << brief_shape_text(i) << ";";
    o << "\n";
  }
  if (!task.outputs.empty()) {
    o << "Outputs:";
    for (const auto& i : task.outputs) o << " " << brief_shape_text(i) << ";";
    o << "\n";
  }
  return brief_capped(o.str(), max_chars);
}

}  // namespace kblaster::engine::optimize
