// Parsing of ptxas -v resource usage.
#include "engine/toolchain/ptxas_parser.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>

namespace kblaster::engine {

std::string demangle(const std::string& mangled) {
  if (mangled.rfind("_Z", 0) != 0) return mangled;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

namespace {

long long to_ll(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

// Reads the comma-separated "N unit" items of a "Used …" or properties line.
void read_items(const std::string& text, kernel_resources& k) {
  static const std::regex item(R"((\d+)\s+(registers|barriers|bytes\s+smem|bytes\s+cmem\[\d+\]|bytes\s+lmem|bytes\s+stack\s+frame|bytes\s+spill\s+stores|bytes\s+spill\s+loads|bytes\s+cumulative\s+stack\s+size))");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), item); it != std::sregex_iterator(); ++it) {
    const long long n = to_ll((*it)[1]);
    const std::string what = (*it)[2];
    if (what == "registers") k.registers = static_cast<int>(n);
    else if (what == "barriers") k.barriers = static_cast<int>(n);
    else if (what.find("smem") != std::string::npos) k.shared_bytes = n;
    else if (what.find("cmem") != std::string::npos) k.constant_bytes += n;
    else if (what.find("lmem") != std::string::npos) k.local_bytes = n;
    else if (what.find("stack frame") != std::string::npos) k.stack_frame_bytes = n;
    else if (what.find("spill stores") != std::string::npos) k.spill_store_bytes = n;
    else if (what.find("spill loads") != std::string::npos) k.spill_load_bytes = n;
    else if (what.find("cumulative") != std::string::npos) k.cumulative_stack_bytes = n;
  }
}

}  // namespace

std::vector<kernel_resources> parse_ptxas_output(std::string_view ptxas_output) {
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex props(R"(Function properties for (\S+))");
  static const std::regex compile_time(R"(Compile time = ([0-9.]+) ms)");
  std::vector<kernel_resources> out;
  // Properties lines follow "Function properties for X"; X may be a device function that the
  // entry calls, whose figures must not overwrite the entry's.
  bool properties_for_entry = false;
  bool in_entry = false;
  std::string text(ptxas_output);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      kernel_resources k;
      k.mangled_name = m[1];
      k.demangled_name = demangle(k.mangled_name);
      k.arch = m[2];
      out.push_back(std::move(k));
      in_entry = true;
      properties_for_entry = false;
    } else if (std::regex_search(line, m, props)) {
      properties_for_entry = in_entry && m[1] == out.back().mangled_name;
    } else if (line.find("ptxas info") == std::string::npos && line.find("stack frame") != std::string::npos) {
      if (properties_for_entry) read_items(line, out.back());
      properties_for_entry = false;
    } else if (in_entry && line.find("Used ") != std::string::npos && line.find("registers") != std::string::npos) {
      read_items(line, out.back());
    } else if (in_entry && std::regex_search(line, m, compile_time)) {
      out.back().compile_time_ms = std::strtod(m[1].str().c_str(), nullptr);
      in_entry = false;
    }
  }
  return out;
}

}  // namespace kblaster::engine
