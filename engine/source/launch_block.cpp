// Constant launch blocks: a small evaluator of integer constant expressions over the names a
// source defines (macros, const integers, dim3 variables), read from the text.
#include "engine/source/launch_block.h"

#include "engine/source/kernel_launches.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

namespace kblaster::engine {
namespace {

// How deep names may refer to names (`#define A B`, `constexpr int B = 2 * C`): a cycle ends here.
constexpr int max_name_depth = 16;

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The arguments of a top-level comma-separated list.
std::vector<std::string_view> split_top_level(std::string_view list) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(trim(list.substr(start, i - start)));
      start = i + 1;
    }
  }
  out.push_back(trim(list.substr(start)));
  return out;
}

// Recursive descent over one expression; names are looked up in the source.
class evaluator {
 public:
  evaluator(std::string_view source, std::string_view expr, int depth) : source_(source), text_(expr), depth_(depth) {}

  std::optional<long long> whole() {
    auto v = sum();
    skip_space();
    if (!v || at_ != text_.size()) return std::nullopt;
    return v;
  }

 private:
  std::string_view source_, text_;
  std::size_t at_ = 0;
  int depth_;

  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  std::optional<long long> sum() {
    auto v = product();
    while (v) {
      if (take('+')) {
        const auto r = product();
        v = r ? std::optional(*v + *r) : std::nullopt;
      } else if (take('-')) {
        const auto r = product();
        v = r ? std::optional(*v - *r) : std::nullopt;
      } else {
        break;
      }
    }
    return v;
  }

  std::optional<long long> product() {
    auto v = unary();
    while (v) {
      if (take('*')) {
        const auto r = unary();
        v = r ? std::optional(*v * *r) : std::nullopt;
      } else if (take('/') || take('%')) {
        const bool divide = text_[at_ - 1] == '/';
        const auto r = unary();
        if (!r || *r == 0) return std::nullopt;
        v = divide ? *v / *r : *v % *r;
      } else {
        break;
      }
      if (v && (*v > std::numeric_limits<int>::max() || *v < -std::numeric_limits<int>::max())) return std::nullopt;
    }
    return v;
  }

  std::optional<long long> unary() {
    if (take('-')) {
      const auto v = unary();
      return v ? std::optional(-*v) : std::nullopt;
    }
    if (take('+')) return unary();
    if (take('(')) {
      const auto v = sum();
      return v && take(')') ? v : std::nullopt;
    }
    skip_space();
    if (at_ >= text_.size()) return std::nullopt;
    if (std::isdigit(static_cast<unsigned char>(text_[at_]))) return number();
    if (ident_char(text_[at_])) return name();
    return std::nullopt;
  }

  std::optional<long long> number() {
    const std::size_t begin = at_;
    while (at_ < text_.size() && (ident_char(text_[at_]) || text_[at_] == '\'')) ++at_;
    std::string digits;
    for (const char c : text_.substr(begin, at_ - begin))
      if (c != '\'') digits += c;
    while (!digits.empty() && (digits.back() == 'u' || digits.back() == 'U' || digits.back() == 'l' || digits.back() == 'L'))
      digits.pop_back();
    int base = 10;
    std::size_t skip = 0;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) base = 16, skip = 2;
    long long v = 0;
    const auto [end, ec] = std::from_chars(digits.data() + skip, digits.data() + digits.size(), v, base);
    if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return v;
  }

  std::optional<long long> name() {
    const std::size_t begin = at_;
    while (at_ < text_.size() && ident_char(text_[at_])) ++at_;
    const std::string_view word = text_.substr(begin, at_ - begin);
    if (word == "dim3") {
      skip_space();
      if (at_ >= text_.size() || (text_[at_] != '(' && text_[at_] != '{')) return std::nullopt;
      const char close = text_[at_] == '(' ? ')' : '}';
      const std::size_t open = at_;
      int depth = 0;
      for (; at_ < text_.size(); ++at_) {
        if (text_[at_] == '(' || text_[at_] == '{') ++depth;
        else if ((text_[at_] == ')' || text_[at_] == '}') && --depth == 0) break;
      }
      if (at_ >= text_.size() || text_[at_] != close) return std::nullopt;
      const std::string_view inside = text_.substr(open + 1, at_ - open - 1);
      ++at_;
      return dims_product(source_, inside, depth_);
    }
    if (depth_ >= max_name_depth) return std::nullopt;
    return value_of_name(source_, word, depth_ + 1);
  }

 public:
  static std::optional<long long> dims_product(std::string_view source, std::string_view list, int depth) {
    const auto dims = split_top_level(list);
    if (dims.empty() || dims.size() > 3) return std::nullopt;
    long long total = 1;
    for (const auto d : dims) {
      const auto v = evaluator(source, d, depth).whole();
      if (!v || *v <= 0) return std::nullopt;
      total *= *v;
    }
    return total;
  }

  static std::optional<long long> value_of_name(std::string_view source, std::string_view name, int depth);
};

// `#define NAME value` (object-like): the value's text.
std::optional<std::string_view> macro_definition(std::string_view source, std::string_view name) {
  for (std::size_t line = 0; line < source.size();) {
    const std::size_t end = std::min(source.find('\n', line), source.size());
    std::string_view l = trim(source.substr(line, end - line));
    line = end + 1;
    if (!l.starts_with('#')) continue;
    l = trim(l.substr(1));
    if (!l.starts_with("define")) continue;
    l = trim(l.substr(6));
    if (!l.starts_with(name) || (l.size() > name.size() && !std::isspace(static_cast<unsigned char>(l[name.size()]))))
      continue;
    std::string_view value = trim(l.substr(name.size()));
    value = trim(value.substr(0, value.find("//")));
    return value;
  }
  return std::nullopt;
}

// `const int NAME = v;`, `constexpr unsigned NAME{v};`, `dim3 NAME(a, b);`, `dim3 NAME = dim3(a, b);`
std::optional<long long> declared_value(std::string_view source, std::string_view name, int depth) {
  for (std::size_t at = source.find(name); at != std::string_view::npos; at = source.find(name, at + 1)) {
    if ((at > 0 && ident_char(source[at - 1])) || (at + name.size() < source.size() && ident_char(source[at + name.size()])))
      continue;
    // The declaration's specifiers: back to the previous statement's end.
    std::size_t start = at;
    while (start > 0 && source[start - 1] != ';' && source[start - 1] != '{' && source[start - 1] != '}') --start;
    const std::string_view specifiers = source.substr(start, at - start);
    const auto has = [&](std::string_view w) {
      for (auto p = specifiers.find(w); p != std::string_view::npos; p = specifiers.find(w, p + 1))
        if ((p == 0 || !ident_char(specifiers[p - 1])) && (p + w.size() >= specifiers.size() || !ident_char(specifiers[p + w.size()])))
          return true;
      return false;
    };
    const bool is_dim3 = has("dim3");
    if (!is_dim3 && !has("const") && !has("constexpr")) continue;
    std::size_t i = at + name.size();
    while (i < source.size() && std::isspace(static_cast<unsigned char>(source[i]))) ++i;
    const std::size_t semicolon = source.find(';', i);
    if (i >= source.size() || semicolon == std::string_view::npos) continue;
    std::string_view init = trim(source.substr(i, semicolon - i));
    std::optional<long long> v;
    if (init.starts_with('=') && !init.starts_with("==")) {
      init = trim(init.substr(1));
      if (is_dim3 && init.starts_with('{') && init.ends_with('}'))
        v = evaluator::dims_product(source, init.substr(1, init.size() - 2), depth);
      else
        v = evaluator(source, init, depth).whole();
    } else if ((init.starts_with('(') && init.ends_with(')')) || (init.starts_with('{') && init.ends_with('}'))) {
      const std::string_view inside = init.substr(1, init.size() - 2);
      v = is_dim3 ? evaluator::dims_product(source, inside, depth) : evaluator(source, inside, depth).whole();
    }
    if (v) return v;
  }
  return std::nullopt;
}

std::optional<long long> evaluator::value_of_name(std::string_view source, std::string_view name, int depth) {
  if (const auto macro = macro_definition(source, name)) return evaluator(source, *macro, depth).whole();
  return declared_value(source, name, depth);
}

}  // namespace

std::optional<long long> constant_value(std::string_view source, std::string_view expr) {
  return evaluator(source, expr, 0).whole();
}

std::optional<launch_block> constant_launch_block(std::string_view source, std::string_view kernel) {
  std::optional<launch_block> found;
  for (const auto& config : launch_configurations(source, kernel)) {
    const auto args = split_top_level(config);
    if (args.size() < 2) continue;
    const auto threads = constant_value(source, args[1]);
    if (!threads || *threads <= 0 || *threads > std::numeric_limits<int>::max()) continue;
    if (found && found->threads != *threads) return std::nullopt;  // launches disagree: none is "the" block
    if (!found) found = launch_block{static_cast<int>(*threads), config};
  }
  return found;
}

}  // namespace kblaster::engine
