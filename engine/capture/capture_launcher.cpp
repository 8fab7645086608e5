// Generating the launcher of a captured kernel launch.
#include "engine/capture/capture_launcher.h"
#include "engine/source/kernel_parameters.h"
#include "engine/task/task.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

namespace kblaster::engine {

namespace {

// Dynamic shared memory above this needs cudaFuncSetAttribute before the launch.
constexpr std::uint64_t default_dynamic_shared_limit = 48 * 1024;

template <typename T>
T read_as(const std::vector<unsigned char>& bytes) {
  T v{};
  std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}

// A C++ literal for a scalar parameter's bytes, or "" when its type is not a plain scalar.
std::string scalar_literal(const std::string& type, const std::vector<unsigned char>& bytes) {
  std::string t = type;
  if (t.rfind("const ", 0) == 0) t = t.substr(6);
  if (t.size() > 6 && t.compare(t.size() - 6, 6, " const") == 0) t.resize(t.size() - 6);
  const auto n = bytes.size();
  char buf[64];
  if (t == "float" && n == 4) {
    const auto v = read_as<float>(bytes);
    if (!std::isfinite(v)) return "";
    std::snprintf(buf, sizeof buf, "%af /* %g */", static_cast<double>(v), static_cast<double>(v));
    return buf;
  }
  if (t == "double" && n == 8) {
    const auto v = read_as<double>(bytes);
    if (!std::isfinite(v)) return "";
    std::snprintf(buf, sizeof buf, "%a /* %g */", v, v);
    return buf;
  }
  if (t == "bool" && n == 1) return bytes[0] ? "true" : "false";
  static const std::set<std::string> signed_types{"int", "long", "long long", "short", "signed char", "char"};
  static const std::set<std::string> unsigned_types{"unsigned int", "unsigned long", "unsigned long long", "unsigned short",
                                                    "unsigned char", "unsigned"};
  if (signed_types.count(t)) {
    long long v = n == 8 ? read_as<std::int64_t>(bytes) : n == 4 ? read_as<std::int32_t>(bytes) : n == 2 ? read_as<std::int16_t>(bytes) : read_as<std::int8_t>(bytes);
    return n == 8 ? std::to_string(v) + "LL" : n == 4 ? std::to_string(v) : "static_cast<" + t + ">(" + std::to_string(v) + ")";
  }
  if (unsigned_types.count(t)) {
    unsigned long long v = n == 8 ? read_as<std::uint64_t>(bytes) : n == 4 ? read_as<std::uint32_t>(bytes) : n == 2 ? read_as<std::uint16_t>(bytes) : read_as<std::uint8_t>(bytes);
    return n == 8 ? std::to_string(v) + "ULL" : n == 4 ? std::to_string(v) + "u" : "static_cast<" + t + ">(" + std::to_string(v) + ")";
  }
  return "";
}

// The demangler's spelling as a declaration: "float const* restrict" -> "float const* __restrict__".
std::string as_declared(std::string type) {
  for (auto at = type.find("restrict"); at != std::string::npos; at = type.find("restrict", at + 12))
    if ((at == 0 || type[at - 1] != '_')) type.replace(at, 8, "__restrict__");
  return type;
}

std::string byte_list(const std::vector<unsigned char>& bytes) {
  std::string out;
  char buf[8];
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s0x%02x", i ? ", " : "", bytes[i]);
    out += buf;
  }
  return out;
}

// The template arguments in a demangled name: "void ns::k<float, 4>(float*, int)" -> "<float, 4>".
std::string template_arguments(const std::string& demangled, const std::string& name) {
  const auto paren = demangled.rfind('(');
  if (paren == std::string::npos || paren == 0 || demangled[paren - 1] != '>') return "";
  int depth = 0;
  for (std::size_t i = paren; i-- > 0;) {
    if (demangled[i] == '>') ++depth;
    if (demangled[i] == '<' && --depth == 0) {
      // Only when the name precedes it: "k<float>" and not "operator<".
      if (i >= name.size() && demangled.compare(i - name.size(), name.size(), name) == 0) return demangled.substr(i, paren - i);
      return "";
    }
  }
  return "";
}

std::vector<std::string> parameter_names(const cuda_symbol& kernel, std::size_t count) {
  const auto params = parameters_of(kernel.signature);
  std::vector<std::string> names;
  std::set<std::string> used;
  for (std::size_t i = 0; i < count; ++i) {
    std::string n = params.size() == count ? params[i].name : "";
    if (n.empty() || n.rfind("kb_", 0) == 0 || used.count(n)) n = "arg" + std::to_string(i);
    used.insert(n);
    names.push_back(n);
  }
  return names;
}

}  // namespace

std::size_t launcher_start(const std::string& candidate) {
  const auto at = candidate.find(launcher_marker);
  if (at == std::string::npos) return at;
  const auto line = candidate.rfind('\n', at);
  return line == std::string::npos ? 0 : line + 1;
}

std::string launch_configuration(const std::string& launcher) {
  const auto open = launcher.rfind("<<<");
  const auto close = open == std::string::npos ? std::string::npos : launcher.find(">>>", open);
  if (close == std::string::npos) return "";
  return launcher.substr(open + 3, close - open - 3);
}

std::vector<std::string> captured_parameter_types(const kernel_capture& capture) {
  std::vector<std::string> types;
  for (const auto& p : parameters_of(capture.name)) types.push_back(as_declared(p.type));
  return types;
}

std::vector<allocation_view> allocation_views(const kernel_capture& capture, const cuda_symbol& kernel) {
  const auto types = captured_parameter_types(capture);
  const auto names = parameter_names(kernel, capture.params.size());
  std::vector<allocation_view> views(capture.allocations.size());
  std::vector<std::set<std::string>> dtypes(views.size());
  for (std::size_t i = 0; i < capture.params.size(); ++i) {
    for (const auto& ptr : capture.params[i].pointers) {
      auto& v = views[ptr.allocation];
      if (v.name.empty()) v.name = names[i] + ", parameter " + std::to_string(i);
      const bool plain = capture.params[i].size == 8 && i < types.size() && types[i].find('*') != std::string::npos;
      dtypes[ptr.allocation].insert(plain ? dtype_of(types[i]) : "");
    }
  }
  int outputs = 0;
  for (std::size_t a = 0; a < views.size(); ++a) {
    auto& v = views[a];
    const auto bytes = capture.allocations[a].bytes;
    v.dtype = dtypes[a].size() == 1 && !dtypes[a].begin()->empty() ? *dtypes[a].begin() : "uint8";
    if (bytes % dtype_bytes(v.dtype)) v.dtype = "uint8";
    v.elements = static_cast<std::int64_t>(bytes / dtype_bytes(v.dtype));
    if (capture.allocations[a].written) v.output = outputs++;
  }
  return views;
}

std::string generate_launcher(const kernel_capture& capture, const cuda_symbol& kernel, const std::string& provenance) {
  const auto types = captured_parameter_types(capture);
  if (types.size() != capture.params.size())
    throw capture_error("the demangled name of " + capture.name + " lists " + std::to_string(types.size()) +
                        " parameters, the driver " + std::to_string(capture.params.size()));
  const auto names = parameter_names(kernel, capture.params.size());
  const auto views = allocation_views(capture, kernel);
  const auto n_in = views.size();
  std::size_t n_out = 0;
  for (const auto& v : views) n_out += v.output >= 0;

  std::string s;
  s += std::string("\n") + launcher_marker + " (generated from the captured launch; above it, the program's code) ----\n";
  s += "// " + provenance + "\n";
  s += "// Memory is as the program had it just before that launch: kb_in[i] holds allocation i; kb_out[j] is the\n"
       "// j-th allocation the launch writes, already holding the program's contents of it when kb_forward is\n"
       "// called (the harness puts them there, outside the timed region). The grid, the block and shared\n"
       "// memory may change; every parameter must keep pointing into the same allocation.\n";
  s += "#include <cstring>\n#include <dlpack/dlpack.h>\n\n";
  s += "extern \"C\" int kb_forward(const DLTensor* kb_in, int kb_n_in, DLTensor* kb_out, int kb_n_out, cudaStream_t kb_stream) {\n";
  s += "  if (kb_n_in != " + std::to_string(n_in) + " || kb_n_out != " + std::to_string(n_out) + ") return 1;\n";
  for (std::size_t a = 0; a < views.size(); ++a) {
    const auto& v = views[a];
    const std::string what = v.dtype + "[" + std::to_string(v.elements) + "], " + (v.output >= 0 ? "written" : "read only");
    if (v.output >= 0) {
      s += "  char* kb_alloc" + std::to_string(a) + " = static_cast<char*>(kb_out[" + std::to_string(v.output) + "].data);  // " +
           v.name + ": " + what + "\n";
    } else {
      s += "  char* kb_alloc" + std::to_string(a) + " = static_cast<char*>(kb_in[" + std::to_string(a) + "].data);  // " + v.name +
           ": " + what + "\n";
    }
  }
  std::string args;
  for (std::size_t i = 0; i < capture.params.size(); ++i) {
    const auto& p = capture.params[i];
    const auto& type = types[i];
    const auto& name = names[i];
    args += (i ? ", " : "") + name;
    const bool plain_pointer = p.size == 8 && p.pointers.size() == 1 && p.pointers[0].at == 0 && type.find('*') != std::string::npos;
    if (plain_pointer) {
      const auto& ptr = p.pointers[0];
      s += "  " + type + " " + name + " = reinterpret_cast<" + type + ">(kb_alloc" + std::to_string(ptr.allocation) +
           (ptr.offset ? " + " + std::to_string(ptr.offset) : std::string()) + ");\n";
      continue;
    }
    if (p.pointers.empty()) {
      if (const auto literal = scalar_literal(type, p.bytes); !literal.empty()) {
        s += "  const " + type + " " + name + " = " + literal + ";\n";
        continue;
      }
    }
    // A by-value struct (or a type the generator does not spell): its captured bytes, with every
    // device address in it moved to the replay's allocation.
    s += "  " + type + " " + name + ";\n";
    s += "  static_assert(sizeof(" + name + ") == " + std::to_string(p.size) + ", \"" + name + ": the captured size\");\n";
    s += "  {\n    const unsigned char kb_bytes[] = {" + byte_list(p.bytes) + "};\n";
    s += "    std::memcpy(static_cast<void*>(&" + name + "), kb_bytes, sizeof kb_bytes);\n";
    for (const auto& ptr : p.pointers)
      s += "    { char* kb_p = kb_alloc" + std::to_string(ptr.allocation) + " + " + std::to_string(ptr.offset) +
           "; std::memcpy(reinterpret_cast<char*>(&" + name + ") + " + std::to_string(ptr.at) + ", &kb_p, sizeof kb_p); }\n";
    s += "  }\n";
  }
  const std::string callee = kernel.qualified_name + template_arguments(capture.name, kernel.qualified_name);
  const auto dim = [](const std::array<unsigned, 3>& d) {
    return "dim3(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) + ", " + std::to_string(d[2]) + ")";
  };
  if (capture.shared_bytes > default_dynamic_shared_limit)
    s += "  cudaFuncSetAttribute(" + callee + ", cudaFuncAttributeMaxDynamicSharedMemorySize, " +
         std::to_string(capture.shared_bytes) + ");\n";
  s += "  " + callee + "<<<" + dim(capture.grid) + ", " + dim(capture.block) + ", " + std::to_string(capture.shared_bytes) +
       ", kb_stream>>>(" + args + ");\n";
  s += "  return static_cast<int>(cudaGetLastError());\n}\n";
  return s;
}

}  // namespace kblaster::engine
