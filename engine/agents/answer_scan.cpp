// Linear scans for the answer parser (see answer_scan.h). Character classes are std::regex's in
// the "C" locale: \w is [A-Za-z0-9_], \s is [ \t\n\v\f\r], '.' is anything but '\n' and '\r'.
#include "engine/agents/answer_scan.h"

#include <cctype>
#include <initializer_list>

namespace kblaster::engine::agents::scan {
namespace {

constexpr auto npos = std::string_view::npos;

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool ends_line(char c) { return c == '\n' || c == '\r'; }

// (^|\n)\s* before `at`: only whitespace between the start of its line and `at` (the \s* may
// also have crossed blank lines, which changes nothing).
bool starts_its_line(std::string_view text, std::size_t at) {
  for (; at > 0 && text[at - 1] != '\n'; --at)
    if (!is_space(text[at - 1])) return false;
  return true;
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != std::tolower(static_cast<unsigned char>(prefix[i])))
      return false;
  return true;
}

// The refusal's alternatives at the start of `s`, ignoring case.
bool refusal_here(std::string_view s) {
  for (std::string_view p : {"I'm sorry", "I am sorry", "Sorry,", "I'm not able to", "I am not able to", "I'm unable to",
                             "I am unable to", "As an AI"})
    if (starts_with_nocase(s, p)) return true;
  if (starts_with_nocase(s, "I won")) {
    std::string_view rest = s.substr(5);
    if (starts_with_nocase(rest, "'")) rest.remove_prefix(1);
    if (starts_with_nocase(rest, "t")) return true;
  }
  if (!starts_with_nocase(s, "I can")) return false;
  for (std::string_view negation : {"not ", "'t ", "\u2019t "}) {
    if (!starts_with_nocase(s.substr(5), negation)) continue;
    const std::string_view verb = s.substr(5 + negation.size());
    for (std::string_view v : {"help", "assist", "comply", "provide", "do that", "write"})
      if (starts_with_nocase(verb, v)) return true;
  }
  return false;
}

}  // namespace

bool python_def(std::string_view s) {
  // The line of the last "->" looked at and the last ':' on it, so that arrows on one line
  // do not each scan to its end.
  std::size_t line_begin = npos, line_end = 0, last_colon = npos;
  const auto colon_after = [&](std::size_t from) {
    if (line_begin == npos || from < line_begin || from >= line_end) {
      line_begin = from;
      while (line_begin > 0 && !ends_line(s[line_begin - 1])) --line_begin;
      line_end = from;
      while (line_end < s.size() && !ends_line(s[line_end])) ++line_end;
      last_colon = s.substr(line_begin, line_end - line_begin).rfind(':');
      if (last_colon != npos) last_colon += line_begin;
    }
    return last_colon != npos && last_colon >= from;
  };
  for (std::size_t at = s.find("def "); at != npos; at = s.find("def ", at + 1)) {
    if (!starts_its_line(s, at)) continue;
    std::size_t open = at + 4;
    while (open < s.size() && is_word(s[open])) ++open;
    if (open == at + 4 || open == s.size() || s[open] != '(') continue;
    // .*\) : any ')' later on the same line; then \s*, then ':' or "->" and a ':' on its line.
    for (std::size_t close = open + 1; close < s.size() && !ends_line(s[close]); ++close) {
      if (s[close] != ')') continue;
      std::size_t next = close + 1;
      while (next < s.size() && is_space(s[next])) ++next;
      if (next < s.size() && s[next] == ':') return true;
      if (s.substr(next, 2) == "->" && colon_after(next + 2)) return true;
    }
  }
  return false;
}

bool starts_like_code(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  const std::string_view s = text.substr(i);
  for (std::string_view p : {"#include", "#define", "#pragma", "//", "/*", "__global__", "__device__", "#if"})
    if (s.starts_with(p)) return true;
  for (std::string_view w : {"extern", "namespace", "static", "constexpr", "typedef", "using", "struct"})
    if (s.starts_with(w) && s.size() > w.size() && is_space(s[w.size()])) return true;
  if (!s.starts_with("template")) return false;
  std::size_t j = 8;
  while (j < s.size() && is_space(s[j])) ++j;
  return j < s.size() && s[j] == '<';
}

bool refusal(std::string_view text) {
  for (std::size_t line = 0; line < text.size();) {
    std::size_t i = line;
    while (i < text.size() && text[i] != '\n' && is_space(text[i])) ++i;
    if (i < text.size() && text[i] != '\n' && refusal_here(text.substr(i))) return true;
    const std::size_t eol = text.find('\n', i);
    if (eol == npos) break;
    line = eol + 1;
  }
  return false;
}

std::vector<std::string> global_kernel_names(std::string_view code) {
  static constexpr std::string_view keyword = "__global__";
  std::vector<std::string> names;
  // The lazy [^;{(]*? stops at the first ';', '{' or '(' after the keyword: a match needs it to
  // be '(' with the name just before it (spaces between), and the name must start after the
  // keyword at a word boundary. Keywords that share that stop share its name.
  std::size_t stop = npos, name_begin = 0, name_end = 0;
  bool have_stop = false;
  for (std::size_t at = code.find(keyword); at != npos; at = code.find(keyword, at + 1)) {
    const std::size_t after = at + keyword.size();
    if (!have_stop || stop < after) {
      stop = code.find_first_of(";{(", after);
      if (stop == npos) break;  // nor for any later keyword
      have_stop = true;
      name_end = stop;
      while (name_end > 0 && is_space(code[name_end - 1])) --name_end;
      name_begin = name_end;
      while (name_begin > 0 && is_word(code[name_begin - 1])) --name_begin;
    }
    if (code[stop] != '(' || name_begin == name_end || name_begin <= after) continue;
    names.emplace_back(code.substr(name_begin, name_end - name_begin));
    at = stop;  // the next match starts after this one
  }
  return names;
}

}  // namespace kblaster::engine::agents::scan
