// Task scaffolding from a kernel signature.
#include "engine/analysis/task_scaffold.h"
#include "engine/source/kernel_parameters.h"

#include <filesystem>

namespace kblaster::engine {

namespace {

// Default tensor length of a scaffold: big enough to time, small enough for a CPU reference.
constexpr long long scaffold_elements = 1 << 20;

}  // namespace

task_scaffold scaffold_task(const std::string& cu_path, const std::string& source, const cuda_symbol& kernel) {
  namespace fs = std::filesystem;
  task_scaffold out;
  fs::path spec = cu_path;
  spec.replace_extension(".task.json");
  out.task_path = spec.string();
  const auto params = parameters_of(kernel.signature);

  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
  std::vector<std::string> input_names;
  std::string casts;  // kb_forward's launch arguments
  int n_in = 0, n_out = 0;
  for (const auto& p : params) {
    if (!casts.empty()) casts += ",\n      ";
    if (p.pointer) {
      std::string dtype = dtype_of(p.type);
      const bool known = !dtype.empty();
      if (!known) dtype = "float32";
      nlohmann::json t = {{"name", p.name}, {"shape", {scaffold_elements}}, {"dtype", dtype}};
      if (p.is_const) {
        t["init"] = "randn";
        if (!known) t["note"] = "TODO: " + p.type + " has no task dtype; float32 is a guess";
        inputs.push_back(t);
        input_names.push_back(p.name);
        casts += "static_cast<" + p.type + ">(in[" + std::to_string(n_in++) + "].data)";
      } else {
        outputs.push_back({{"name", p.name}, {"shape", {scaffold_elements}}, {"dtype", dtype}});
        casts += "static_cast<" + p.type + ">(out[" + std::to_string(n_out++) + "].data)";
      }
    } else if (is_integer_scalar(p)) {
      casts += "static_cast<" + (p.type.empty() ? std::string("int") : p.type) + ">(n)";
    } else {
      casts += "/* TODO: " + p.type + " " + p.name + " */ {}";
    }
  }
  std::string args;
  for (std::size_t i = 0; i < input_names.size(); ++i) args += (i ? ", " : "") + input_names[i];
  const std::string first = input_names.empty() ? "x" : input_names[0];
  out.task = {
      {"name", fs::path(cu_path).stem().string()},
      {"description", "Scaffolded by KernelBlaster from the parameters of " + kernel.name +
                          ": check the shapes and dtypes, and write the reference."},
      {"kernel", fs::path(cu_path).filename().string()},
      {"reference", {{"source", "def forward(" + (args.empty() ? std::string("x") : args) +
                                    "):\n    # TODO: the PyTorch computation " + kernel.name +
                                    " must match\n    return " + first + "\n"}}},
      {"inputs", inputs},
  };
  if (!outputs.empty()) out.task["outputs"] = outputs;
  out.task_text = out.task.dump(2) + "\n";

  if (source.find("kb_forward") == std::string::npos) {
    out.needs_dlpack_include = source.find("dlpack/dlpack.h") == std::string::npos;
    const std::string counted = !inputs.empty() ? "in[0]" : !outputs.empty() ? "out[0]" : "";
    out.entry_stub =
        "\n// Entry point for KernelBlaster's harness (scaffolded: check the counts, the size and the launch).\n"
        "extern \"C\" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {\n"
        "  if (n_in != " + std::to_string(n_in) + " || n_out != " + std::to_string(n_out) + ") return 1;\n"
        "  const long long n = " + (counted.empty() ? std::string("0") : counted + ".shape[0]") + ";\n"
        "  const int block = 256;\n"
        "  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);\n" +
        std::string(kernel.template_parameters.empty() ? "" : "  // TODO: choose the template arguments.\n") +
        "  " + kernel.name + "<<<grid, block, 0, stream>>>(\n      " + casts + ");\n"
        "  return static_cast<int>(cudaGetLastError());\n"
        "}\n";
  }
  return out;
}

}  // namespace kblaster::engine
