// Kernel parameter lists from signature text.
#include "engine/source/kernel_parameters.h"
#include "support/text.h"

#include <cctype>
#include <regex>

namespace kblaster::engine {

// support::trim spelled out: the fuzz build compiles this file in one unit with others that
// define a trim of their own.

std::vector<kernel_parameter> parameters_of(const std::string& signature) {
  std::vector<kernel_parameter> out;
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
    std::string p(support::trim(current));
    current.clear();
    if (p.empty() || p == "void") return;
    if (const auto eq = p.find('='); eq != std::string::npos) p = support::trim(p.substr(0, eq));
    kernel_parameter param;
    std::size_t name_start = p.size();
    while (name_start > 0 && (std::isalnum(static_cast<unsigned char>(p[name_start - 1])) || p[name_start - 1] == '_'))
      --name_start;
    param.name = p.substr(name_start);
    param.type = support::trim(p.substr(0, name_start));
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
  return std::string(support::trim(std::regex_replace(type, qualifiers, "")));
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

bool is_integer_scalar(const kernel_parameter& p) {
  const std::string t = base_type(p.type);
  return !p.pointer && (t == "int" || t == "long" || t == "long long" || t == "size_t" || t == "int64_t" ||
                        t == "int32_t" || t == "unsigned" || t.empty());
}

}  // namespace kblaster::engine
