// Parsing of nvcc, host compiler and ptxas diagnostics.
#include "engine/toolchain/nvcc_diagnostics.h"

#include <charconv>
#include <regex>
#include <sstream>

namespace kblaster::engine {

const char* to_string(diagnostic_severity s) {
  switch (s) {
    case diagnostic_severity::error: return "error";
    case diagnostic_severity::warning: return "warning";
    case diagnostic_severity::note: return "note";
  }
  return "error";
}

namespace {

diagnostic_severity severity_of(const std::string& word) {
  if (word.find("warning") != std::string::npos) return diagnostic_severity::warning;
  if (word.find("note") != std::string::npos || word.find("remark") != std::string::npos) return diagnostic_severity::note;
  return diagnostic_severity::error;  // error, catastrophic error, fatal
}

// A line or column number the regexes matched (\d+): 0, "unknown", when it does not fit an int.
// std::stoi threw std::out_of_range on such a number, out of the parser (found by fuzz_nvcc_diagnostics).
int position(const std::ssub_match& digits) {
  const std::string s = digits.str();
  int value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() ? value : 0;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string l(text.substr(pos, end - pos));
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
    if (end == text.size()) break;
    pos = end + 1;
  }
  return lines;
}

}  // namespace

std::vector<diagnostic> parse_nvcc_diagnostics(std::string_view output) {
  // cudafe/EDG: file.cu(12): error #20: message   (the number is optional)
  static const std::regex edg(R"(^(.+?)\((\d+)\): (catastrophic error|error|warning|remark|note)(?: #([\w-]+))?: (.*)$)");
  // host compiler: file.cu:12:5: error: message
  static const std::regex gcc(R"(^(.+?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$)");
  // ptxas: "ptxas error   : message" or "ptxas /tmp/x.ptx, line 45; error   : message"
  static const std::regex ptxas(R"(^ptxas(?: ([^,]+), line (\d+);)? *(error|warning|fatal) *: (.*)$)");
  static const std::regex nvcc_fatal(R"(^nvcc (fatal|error|warning) *: (.*)$)");
  static const std::regex entry(R"(Entry function '([^']+)')");
  std::vector<diagnostic> out;
  const auto lines = split_lines(output);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (std::regex_match(l, m, edg)) {
      diagnostic d;
      d.file = m[1];
      d.line = position(m[2]);
      d.severity = severity_of(m[3]);
      d.code = m[4];
      d.message = m[5];
      d.tool = "nvcc";
      // EDG quotes the source line (indented by two spaces) and puts a caret under the column.
      if (i + 2 < lines.size()) {
        const std::string& caret = lines[i + 2];
        const auto at = caret.find('^');
        if (at != std::string::npos && caret.find_first_not_of(' ') == at && at >= 2) {
          d.column = static_cast<int>(at) - 2 + 1;
          i += 2;
        }
      }
      out.push_back(std::move(d));
    } else if (std::regex_match(l, m, ptxas)) {
      diagnostic d;
      d.tool = "ptxas";
      d.severity = severity_of(m[3]);
      d.message = m[4];
      if (m[1].matched) { d.file = m[1]; d.line = position(m[2]); }
      std::smatch e;
      if (std::regex_search(d.message, e, entry)) d.kernel = e[1];
      out.push_back(std::move(d));
    } else if (std::regex_match(l, m, nvcc_fatal)) {
      out.push_back({"", 0, 0, severity_of(m[1]), "", m[2], "nvcc", ""});
    } else if (std::regex_match(l, m, gcc) && l.rfind("ptxas", 0) != 0) {
      diagnostic d;
      d.file = m[1];
      d.line = position(m[2]);
      d.column = m[3].matched ? position(m[3]) : 0;
      d.severity = severity_of(m[4]);
      d.message = m[5];
      d.tool = "host";
      out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace kblaster::engine
