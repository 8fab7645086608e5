// Task scaffolding from a kernel signature, its body (which pointers it writes and reads) and
// a launch of it written in the file (the values of its scalars).
#include "engine/analysis/task_scaffold.h"
#include "engine/source/kernel_parameters.h"
#include "engine/source/launch_block.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>

namespace kblaster::engine {

namespace {

// Default tensor length of a scaffold: big enough to time, small enough for a CPU reference.
constexpr long long scaffold_elements = 1 << 20;

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

pointer_use use_in_body(std::string_view body, std::string_view name) {
  pointer_use use;
  if (name.empty()) return use;
  for (auto at = body.find(name); at != std::string_view::npos; at = body.find(name, at + 1)) {
    if ((at > 0 && ident(body[at - 1])) || (at + name.size() < body.size() && ident(body[at + name.size()]))) continue;
    // An atomic on it (atomicAdd(&x[i], v), atomicAdd(x + i, v)) reads and writes.
    const auto before = body.substr(0, at);
    const auto call = before.rfind("atomic");
    if (call != std::string_view::npos && before.find_first_of(";{}", call) == std::string_view::npos) {
      use.read = use.written = true;
      continue;
    }
    std::size_t i = at + name.size();
    const auto skip_space = [&] {
      while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i;
    };
    skip_space();
    const bool dereferenced = at > 0 && trim(before).ends_with('*') && !trim(before).ends_with("**");
    if (i < body.size() && body[i] == '[') {
      int depth = 0;
      for (; i < body.size(); ++i) {
        if (body[i] == '[') ++depth;
        else if (body[i] == ']' && --depth == 0) break;
      }
      ++i;
      skip_space();
    } else if (!dereferenced) {
      use.read = true;  // passed on or offset: taken as read
      continue;
    }
    const std::string_view rest = body.substr(std::min(i, body.size()));
    if (rest.starts_with('=') && !rest.starts_with("==")) {
      use.written = true;
    } else if (rest.starts_with("++") || rest.starts_with("--") ||
               (rest.size() > 1 && rest[1] == '=' && std::string_view("+-*/%&|^").find(rest[0]) != std::string_view::npos) ||
               rest.starts_with("<<=") || rest.starts_with(">>=")) {
      use.read = use.written = true;
    } else {
      use.read = true;
    }
  }
  return use;
}

std::vector<std::string> launch_arguments(std::string_view source, std::string_view name) {
  for (auto at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    if ((at > 0 && ident(source[at - 1])) || (at + name.size() < source.size() && ident(source[at + name.size()])))
      continue;
    const auto open = source.find("<<<", at + name.size());
    if (open == std::string_view::npos || source.find_first_of(";{}", at) < open) continue;
    const auto close = source.find(">>>", open);
    if (close == std::string_view::npos) continue;
    std::size_t i = close + 3;
    while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
    if (i >= source.size() || source[i] != '(') continue;
    std::vector<std::string> args;
    int depth = 0;
    std::size_t start = i + 1;
    for (std::size_t j = i; j < source.size(); ++j) {
      const char c = source[j];
      if (c == '(' || c == '[' || c == '{') ++depth;
      else if (c == ')' || c == ']' || c == '}') {
        if (--depth == 0) {
          if (const auto last = trim(source.substr(start, j - start)); !last.empty() || !args.empty())
            args.emplace_back(last);
          return args;
        }
      } else if (c == ',' && depth == 1) {
        args.emplace_back(trim(source.substr(start, j - start)));
        start = j + 1;
      }
    }
  }
  return {};
}

namespace {

// A floating-point literal's value ("2.0f", "0.5", "1e-3"); nullopt for anything else.
std::optional<double> float_literal(std::string_view text) {
  std::string s(trim(text));
  if (!s.empty() && (s.back() == 'f' || s.back() == 'F')) s.pop_back();
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// What a scalar parameter is in the scaffold: its value in kb_forward and its entry in the task.
struct scalar_plan {
  std::string expression;  // kb_forward's argument
  nlohmann::json entry;    // the task's "scalars" entry
};

scalar_plan plan_scalar(const kernel_parameter& p, std::string_view source, const std::vector<std::string>& launch,
                        std::size_t index, const std::string& kernel) {
  const std::string type = p.type.empty() ? "int" : p.type;
  scalar_plan plan;
  plan.entry = {{"name", p.name}, {"type", type}};
  const std::string arg = index < launch.size() ? launch[index] : "";
  const bool integer = is_integer_scalar(p);
  if (!arg.empty()) {
    if (integer) {
      if (const auto v = constant_value(source, arg)) {
        plan.expression = "static_cast<" + type + ">(" + std::to_string(*v) + ")";
        plan.entry["value"] = *v;
        plan.entry["from"] = "the launch of " + kernel + " in the file (" + arg + ")";
        return plan;
      }
    } else if (const auto v = float_literal(arg)) {
      plan.expression = "static_cast<" + type + ">(" + std::string(trim(arg)) + ")";
      plan.entry["value"] = *v;
      plan.entry["from"] = "the launch of " + kernel + " in the file (" + arg + ")";
      return plan;
    }
  }
  if (integer) {
    // A length not fixed in the file: the tensors' (the usual meaning of an int n).
    plan.expression = "static_cast<" + type + ">(n)";
    plan.entry["value"] = "elements";
    plan.entry["from"] = "the length of the first tensor (check that it is what " + p.name + " means)";
    return plan;
  }
  plan.expression = "static_cast<" + type + ">(0) /* FILL IN: " + p.name + " */";
  plan.entry["value"] = nullptr;
  plan.entry["fill_in"] = "no launch in the file gives " + p.name +
                          "'s value: set \"value\" here and the same value in kb_forward (where it is 0)";
  return plan;
}

}  // namespace

task_scaffold scaffold_task(const std::string& cu_path, const std::string& source, const cuda_symbol& kernel) {
  namespace fs = std::filesystem;
  task_scaffold out;
  fs::path spec = cu_path;
  spec.replace_extension(".task.json");
  out.task_path = spec.string();
  const auto params = parameters_of(kernel.signature);
  // The body only: the parameter list names every pointer once, which is no read.
  const std::size_t end = std::min(kernel.full_range.end, source.size());
  const std::size_t open = std::min(source.find('{', kernel.name_range.end), end);
  const std::string_view body = std::string_view(source).substr(open, end - open);
  const auto launch = launch_arguments(source, kernel.name);
  // A length the launch fixes (`constexpr int n = 4096`) sizes the tensors.
  long long elements = scaffold_elements;
  for (std::size_t i = 0; i < params.size() && i < launch.size(); ++i)
    if (!params[i].pointer && is_integer_scalar(params[i]))
      if (const auto v = constant_value(source, launch[i]); v && *v > 0) {
        elements = *v;
        break;
      }

  nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array(), scalars = nlohmann::json::array();
  std::vector<std::string> input_names;
  std::string casts;  // kb_forward's launch arguments
  int n_in = 0, n_out = 0;
  for (std::size_t index = 0; index < params.size(); ++index) {
    const auto& p = params[index];
    if (!casts.empty()) casts += ",\n      ";
    if (!p.pointer) {
      auto plan = plan_scalar(p, source, launch, index, kernel.name);
      casts += plan.expression;
      scalars.push_back(std::move(plan.entry));
      continue;
    }
    std::string dtype = dtype_of(p.type);
    const bool known = !dtype.empty();
    if (!known) dtype = "float32";
    nlohmann::json t = {{"name", p.name}, {"shape", {elements}}, {"dtype", dtype}};
    if (!known) t["note"] = "TODO: " + p.type + " has no task dtype; float32 is a guess";
    const auto use = use_in_body(body, p.name);
    const bool written = !p.is_const && use.written;
    if (!written || use.read) {
      t["init"] = "randn";
      inputs.push_back(t);
      input_names.push_back(p.name);
    }
    if (written) {
      nlohmann::json o = {{"name", p.name}, {"shape", {elements}}, {"dtype", dtype}};
      // In place: the output starts as the input the kernel reads (the same pointer).
      if (use.read) o["initial_from"] = n_in;
      outputs.push_back(o);
      casts += "static_cast<" + p.type + ">(out[" + std::to_string(n_out++) + "].data)";
      if (use.read) ++n_in;
    } else {
      casts += "static_cast<" + p.type + ">(in[" + std::to_string(n_in++) + "].data)";
    }
  }
  std::string args;
  for (std::size_t i = 0; i < input_names.size(); ++i) args += (i ? ", " : "") + input_names[i];
  const std::string first = input_names.empty() ? "x" : input_names[0];
  out.task = {
      {"name", fs::path(cu_path).stem().string()},
      {"description", "Scaffolded by KernelBlaster from the parameters of " + kernel.qualified_name +
                          ": check the shapes and dtypes, and write the reference."},
      {"kernel", fs::path(cu_path).filename().string()},
      {"reference", {{"source", "def forward(" + (args.empty() ? std::string("x") : args) +
                                    "):\n    # TODO: the PyTorch computation " + kernel.name +
                                    " must match\n    return " + first + "\n"}}},
      {"inputs", inputs},
  };
  if (!outputs.empty()) out.task["outputs"] = outputs;
  if (!scalars.empty()) out.task["scalars"] = scalars;
  out.task_text = out.task.dump(2) + "\n";

  if (source.find("kb_forward") == std::string::npos) {
    out.needs_dlpack_include = source.find("dlpack/dlpack.h") == std::string::npos;
    const std::string counted = n_in > 0 ? "in[0]" : n_out > 0 ? "out[0]" : "";
    // The qualified name: the stub goes at the end of the file, outside any namespace.
    out.entry_stub =
        "\n// Entry point for KernelBlaster's harness (scaffolded: check the counts, the size and the launch).\n"
        "extern \"C\" int kb_forward(const DLTensor* in, int n_in, DLTensor* out, int n_out, cudaStream_t stream) {\n"
        "  if (n_in != " + std::to_string(n_in) + " || n_out != " + std::to_string(n_out) + ") return 1;\n"
        "  const long long n = " + (counted.empty() ? std::string("0") : counted + ".shape[0]") + ";\n"
        "  const int block = 256;\n"
        "  const unsigned grid = static_cast<unsigned>((n + block - 1) / block);\n" +
        std::string(kernel.template_parameters.empty() ? "" : "  // TODO: choose the template arguments.\n") +
        "  " + kernel.qualified_name + "<<<grid, block, 0, stream>>>(\n      " + casts + ");\n"
        "  return static_cast<int>(cudaGetLastError());\n"
        "}\n";
  }
  return out;
}

}  // namespace kblaster::engine
