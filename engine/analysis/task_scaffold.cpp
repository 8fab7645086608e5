// Task scaffolding from a kernel signature.
#include "engine/analysis/task_scaffold.h"
#include "support/text.h"

#include <filesystem>
#include <regex>

namespace kblaster::engine {

namespace {

// Default tensor length of a scaffold: big enough to time, small enough for a CPU reference.
constexpr long long scaffold_elements = 1 << 20;

struct parameter {
  std::string type, name;
  bool pointer = false, is_const = false;
};

using support::trim;

std::vector<parameter> parameters_of(const std::string& signature) {
  std::vector<parameter> out;
  // The parameter list is the last top-level parenthesised group (after __launch_bounds__(...)).
  const auto close = signature.rfind(')');
  if (close == std::string::npos) return out;
  int depth = 0;
  std::size_t start = std::string::npos;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (signature[i] == ')') ++depth;
    if (signature[i] == '(' && --depth == 0) {
      start = i;
      break;
    }
  }
  if (start == std::string::npos) return out;
  const std::string list = signature.substr(start + 1, close - start - 1);
  depth = 0;
  std::string current;
  const auto flush = [&] {
    std::string p(trim(current));
    current.clear();
    if (p.empty() || p == "void") return;
    if (const auto eq = p.find('='); eq != std::string::npos) p = trim(p.substr(0, eq));
    parameter param;
    std::size_t name_start = p.size();
    while (name_start > 0 && (std::isalnum(static_cast<unsigned char>(p[name_start - 1])) || p[name_start - 1] == '_'))
      --name_start;
    param.name = p.substr(name_start);
    param.type = trim(p.substr(0, name_start));
    if (param.type.empty()) std::swap(param.type, param.name);
    param.pointer = param.type.find('*') != std::string::npos;
    param.is_const = param.type.find("const") != std::string::npos && param.type.find("const") < param.type.find('*');
    out.push_back(param);
  };
  for (const char c : list) {
    if (c == '<' || c == '(' || c == '[') ++depth;
    if (c == '>' || c == ')' || c == ']') --depth;
    if (c == ',' && depth == 0) flush();
    else current += c;
  }
  flush();
  return out;
}

std::string base_type(const std::string& type) {
  static const std::regex qualifiers(R"(\b(const|volatile|__restrict__|restrict|unsigned\s+)\b|\*)");
  return std::string(trim(std::regex_replace(type, qualifiers, "")));
}

std::string dtype_of(const std::string& type) {
  const std::string t = base_type(type);
  const bool is_unsigned = type.find("unsigned") != std::string::npos;
  if (t == "float") return "float32";
  if (t == "double") return "float64";
  if (t == "half" || t == "__half") return "float16";
  if (t == "__nv_bfloat16" || t == "nv_bfloat16") return "bfloat16";
  if (t == "int" || t == "int32_t") return is_unsigned ? "" : "int32";
  if (t == "long long" || t == "int64_t" || t == "long") return "int64";
  if (t == "char" || t == "uint8_t") return is_unsigned || t == "uint8_t" ? "uint8" : "";
  if (t == "bool") return "bool";
  return "";
}

bool is_integer_scalar(const parameter& p) {
  const std::string t = base_type(p.type);
  return !p.pointer && (t == "int" || t == "long" || t == "long long" || t == "size_t" || t == "int64_t" ||
                        t == "int32_t" || t == "unsigned" || t.empty());
}

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
