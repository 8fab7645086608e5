// carry_launch: find each `kernel<<<config>>>(args)` in the program, rebuild its configuration
// element by element from the rewritten one with the site's arguments in place of the
// parameters, and refuse where the result would not be the rewrite's launch for every shape.
#include "engine/capture/launch_carry.h"

#include "support/text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>

namespace kblaster::engine {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whitespace runs as one space, none next to brackets or before commas: configurations compare
// as written, whatever their spacing.
std::string normalized(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
      continue;
    }
    if ((c == ')' || c == ']' || c == ',' || c == '(') && !out.empty() && out.back() == ' ') out.pop_back();
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  std::string tight;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!(out[i] == ' ' && i > 0 && (out[i - 1] == '(' || out[i - 1] == '['))) tight += out[i];
  return tight;
}

// The word that stands for the site's grid while the rest of a rewritten grid is carried.
const std::string site_grid_word = "kb_site_grid";

// Words that name a type or a cast, not a value: `static_cast<unsigned>(2048)` is a constant.
bool is_type_or_cast(const std::string& word) {
  static const std::set<std::string> words = {"dim3", "sizeof", "static_cast", "int", "unsigned", "long", "short",
                                              "char", "size_t", "std", "min", "max"};
  return words.count(word) > 0;
}

bool has_identifier(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {  // 1.0f, 0x20u: literals, not names
      while (i < s.size() && ident_char(s[i])) ++i;
      continue;
    }
    if (ident_start(s[i])) {
      std::size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      const auto word = s.substr(i, j - i);
      const bool member = i > 0 && (s[i - 1] == '.' || (i > 1 && s.compare(i - 2, 2, "->") == 0));  // `.x` names no value
      if (!is_type_or_cast(word) && !member) return true;
      i = j;
    }
  }
  return false;
}

bool whole_word_in(const std::string& text, const std::string& word) {
  for (auto at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    // A member (`grid.x`, `p->x`) is not the name `x`.
    const bool member = at > 0 && (text[at - 1] == '.' || (at > 1 && text.compare(at - 2, 2, "->") == 0));
    const bool left = (at == 0 || !ident_char(text[at - 1])) && !member;
    const bool right = at + word.size() >= text.size() || !ident_char(text[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

// Evaluated a second time in the configuration, an argument must not change anything.
bool has_side_effects(const std::string& arg) {
  if (arg.find("++") != std::string::npos || arg.find("--") != std::string::npos) return true;
  for (std::size_t i = 0; i < arg.size(); ++i)
    if (arg[i] == '=') {
      const char before = i ? arg[i - 1] : ' ', after = i + 1 < arg.size() ? arg[i + 1] : ' ';
      if (after == '=' ) { ++i; continue; }
      if (before != '=' && before != '!' && before != '<' && before != '>') return true;
    }
  return false;
}

struct call_site {
  std::size_t config_begin = 0, config_end = 0;  // between <<< and >>>
  std::vector<std::string> config, args;
};

// The sites `name<<<…>>>(…)` and `name<T><<<…>>>(…)` outside line comments.
std::vector<call_site> find_sites(const std::string& text, const std::string& name) {
  std::vector<call_site> out;
  for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    if ((at > 0 && ident_char(text[at - 1])) || (at + name.size() < text.size() && ident_char(text[at + name.size()]))) continue;
    const auto line = text.rfind('\n', at);
    const auto line_start = line == std::string::npos ? 0 : line + 1;
    if (text.substr(line_start, at - line_start).find("//") != std::string::npos) continue;
    std::size_t i = at + name.size();
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (text.compare(i, 3, "<<<") != 0 && i < text.size() && text[i] == '<') {  // template arguments
      int depth = 0;
      for (; i < text.size(); ++i) {
        if (text[i] == '<') ++depth;
        if (text[i] == '>' && --depth == 0) { ++i; break; }
      }
      while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    }
    if (text.compare(i, 3, "<<<") != 0) continue;
    const auto close = text.find(">>>", i + 3);
    if (close == std::string::npos) continue;
    call_site s;
    s.config_begin = i + 3;
    s.config_end = close;
    s.config = split_top_level(text.substr(s.config_begin, close - s.config_begin));
    std::size_t p = close + 3;
    while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p]))) ++p;
    if (p >= text.size() || text[p] != '(') continue;
    int depth = 0;
    std::size_t q = p;
    for (; q < text.size(); ++q) {
      if (text[q] == '(') ++depth;
      if (text[q] == ')' && --depth == 0) break;
    }
    if (q >= text.size()) continue;
    s.args = split_top_level(text.substr(p + 1, q - p - 1));
    out.push_back(std::move(s));
  }
  return out;
}

// `element` with every parameter replaced by the site's argument, kb_stream by its stream;
// nullopt with `why` set for a name that has no meaning at the call site.
std::optional<std::string> substituted(const std::string& element, const std::map<std::string, std::string>& by_parameter,
                                       const std::string& stream, const std::string& code, std::string& why) {
  std::string out;
  for (std::size_t i = 0; i < element.size();) {
    if (std::isdigit(static_cast<unsigned char>(element[i]))) {
      while (i < element.size() && (ident_char(element[i]) || element[i] == '.')) out += element[i++];
      continue;
    }
    if (!ident_start(element[i])) {
      out += element[i++];
      continue;
    }
    std::size_t j = i;
    while (j < element.size() && ident_char(element[j])) ++j;
    const auto word = element.substr(i, j - i);
    const bool member = i > 0 && (element[i - 1] == '.' || (i > 1 && element.compare(i - 2, 2, "->") == 0) ||
                                  (i > 1 && element.compare(i - 2, 2, "::") == 0));
    if (member) {
      out += word;
    } else if (const auto p = by_parameter.find(word); p != by_parameter.end()) {
      out += "(" + p->second + ")";
    } else if (word == "kb_stream") {
      out += stream;
    } else if (is_type_or_cast(word) || word == site_grid_word || whole_word_in(code, word)) {
      out += word;  // a type, an operator, or a name the program's code (the rewrite's part) defines
    } else {
      why = "the rewritten launch uses `" + word + "`, which only the launcher knows (it is not a parameter of the kernel)";
      return std::nullopt;
    }
    i = j;
  }
  return out;
}

// Whether `want` counts its blocks from the launcher's whole grid `generated` (a 1-D dim3, as a
// captured launch's launcher writes it) and the site's grid can stand in for it: a scalar
// expression, or a dim3 the site writes with only an x (never a name the program declares a
// dim3: its y and z may be more than 1 for other shapes).
bool counts_generated_grid(const std::string& want, const std::string& generated, const std::string& site,
                           const std::string& program) {
  const auto g = normalized(generated);
  if (normalized(want).find("(" + g + ").x") == std::string::npos) return false;
  if (g.rfind("dim3(", 0) != 0 || split_top_level(g.substr(5, g.size() - 6)).size() > 3) return false;
  const auto s = normalized(site);
  if (s.rfind("dim3(", 0) == 0) {
    if (s.back() != ')') return false;
    const auto parts = split_top_level(s.substr(5, s.size() - 6));
    for (std::size_t i = 1; i < parts.size(); ++i)
      if (parts[i] != "1") return false;
  }
  const bool single_name = !site.empty() && ident_start(site.front()) &&
                           std::all_of(site.begin(), site.end(), [](char c) { return ident_char(c); });
  return !(single_name && std::regex_search(program, std::regex("\\bdim3\\s+" + site + "\\b")));
}

// `want` with `(GENERATED).x` written as the site-grid word.
std::string with_site_grid_word(const std::string& want, const std::string& generated) {
  std::string text = normalized(want);
  const std::string whole = "(" + normalized(generated) + ").x";
  for (std::size_t at; (at = text.find(whole)) != std::string::npos;) text.replace(at, whole.size(), site_grid_word);
  return text;
}

// `value` with the site-grid word replaced by the site's grid, counted by its x.
std::string with_site_grid(std::string value, const std::string& site) {
  const std::string x = "dim3(" + site + ").x";
  for (std::size_t at; (at = value.find(site_grid_word)) != std::string::npos;) value.replace(at, site_grid_word.size(), x);
  return value;
}

}  // namespace

std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::string part;
  for (const char c : text) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::string(support::trim(part)));
      part.clear();
      continue;
    }
    part += c;
  }
  if (!support::trim(part).empty() || !out.empty()) out.push_back(std::string(support::trim(part)));
  return out;
}

carried_launch carry_launch(const std::string& program, std::size_t code_end, const std::string& kernel_name,
                            const std::vector<std::string>& parameters, const std::string& generated,
                            const std::string& rewritten) {
  carried_launch out;
  const auto gen = split_top_level(generated), rew = split_top_level(rewritten);
  if (gen.size() != 4 || rew.size() < 2 || rew.size() > 4) {
    out.refusal = "the rewritten launch <<<" + rewritten + ">>> does not have the launcher's form (grid, block, shared memory, kb_stream)";
    return out;
  }
  const std::string code = program.substr(0, std::min(code_end, program.size()));
  const auto sites = find_sites(program, kernel_name);
  if (sites.empty()) {
    out.refusal = "no call site `" + kernel_name + "<<<…>>>(…)` was found in the program to carry the launch to";
    return out;
  }
  static const char* what[] = {"grid", "block", "shared memory size", "stream"};
  std::string edited = program;
  // Back to front, so that earlier offsets stay valid.
  for (auto s = sites.rbegin(); s != sites.rend(); ++s) {
    if (s->args.size() != parameters.size()) {
      out.refusal = "a call site passes " + std::to_string(s->args.size()) + " arguments to " + kernel_name + ", which has " +
                    std::to_string(parameters.size()) + " parameters";
      return out;
    }
    std::map<std::string, std::string> by_parameter;
    for (std::size_t p = 0; p < parameters.size(); ++p)
      if (!parameters[p].empty()) by_parameter[parameters[p]] = s->args[p];
    const std::string stream = s->config.size() > 3 ? s->config[3] : "0";
    std::vector<std::string> config;
    for (std::size_t e = 0; e < 4; ++e) {
      const std::string site_element = e < s->config.size() ? s->config[e] : (e == 2 ? "0" : e == 3 ? "0" : "");
      const std::string want = e < rew.size() ? rew[e] : (e == 2 ? "0" : "kb_stream");
      if (normalized(want) == normalized(gen[e])) {  // as generated: the site's own expression stands
        config.push_back(site_element);
        continue;
      }
      if (e == 3) {
        out.refusal = "the rewrite launches on another stream (" + want + "), which cannot be carried to your program";
        return out;
      }
      // A rewrite that counts blocks from the launcher's own grid (block-size tuning's
      // `(dim3(2048, 1, 1)).x * 256 / 128`) is carried with the site's grid in its place: the
      // relation holds for every shape, where the captured number would hold for one.
      const bool counts_site_grid = e == 0 && counts_generated_grid(want, gen[0], site_element, program);
      const std::string written = counts_site_grid ? with_site_grid_word(want, gen[0]) : want;
      std::string why;
      auto value = substituted(written, by_parameter, stream, code, why);
      if (value && counts_site_grid) *value = with_site_grid(*value, site_element);
      if (!value) {
        out.refusal = why;
        return out;
      }
      bool uses_parameter = false;
      for (const auto& [name, arg] : by_parameter) {
        if (!whole_word_in(want, name)) continue;
        uses_parameter = true;
        if (has_side_effects(arg)) {
          out.refusal = "the call site's argument `" + arg + "` has side effects, and the new " + what[e] +
                        " would evaluate it again";
          return out;
        }
      }
      if (!uses_parameter && !counts_site_grid && has_identifier(site_element) && !has_identifier(want) && e < 2) {
        out.refusal = "the rewritten " + std::string(what[e]) + " `" + want + "` is a constant computed for the captured shape, where your call site computes it (`" +
                      site_element + "`): carried, it would hold for that shape only";
        return out;
      }
      config.push_back(*value);
    }
    // Trailing defaults as the site wrote them: no "0, 0" added where it had none.
    while (config.size() > std::max<std::size_t>(2, s->config.size()) && (config.back() == "0" || config.back().empty()))
      config.pop_back();
    std::string joined;
    for (const auto& c : config) joined += (joined.empty() ? "" : ", ") + c;
    edited.replace(s->config_begin, s->config_end - s->config_begin, joined);
    ++out.sites;
  }
  out.edited = std::move(edited);
  return out;
}

}  // namespace kblaster::engine
