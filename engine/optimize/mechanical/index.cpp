// The mechanical tier's reading of 1-D index arithmetic: the global thread index and the grid
// stride in any of their usual spellings (operand order, parentheses, casts), and the
// grid-stride loop that uses both.
#include <algorithm>
#include <set>

#include "engine/optimize/mechanical/detail.h"

namespace kblaster::engine::optimize::mech {
namespace {

using term = std::vector<std::string>;
using polynomial = std::vector<term>;

// A sum of products of blockIdx.x-like atoms, casts dropped: enough to recognise the global
// index and the grid stride in any of their usual spellings, and nothing else.
class index_parser {
 public:
  index_parser(const parsed_source& s, token_range r) : s_(s), i_(r.begin), end_(r.end) {}

  std::optional<polynomial> parse() {
    polynomial p = sum();
    if (!ok_ || i_ != end_) return std::nullopt;
    for (term& t : p) std::sort(t.begin(), t.end());
    std::sort(p.begin(), p.end());
    return p;
  }

 private:
  bool at(char c) const { return i_ < end_ && s_.tokens[i_].is(c); }

  polynomial sum() {
    polynomial p = product();
    while (ok_ && at('+')) {
      ++i_;
      const polynomial q = product();
      p.insert(p.end(), q.begin(), q.end());
    }
    return p;
  }

  polynomial product() {
    polynomial p = factor();
    while (ok_ && at('*')) {
      ++i_;
      const polynomial q = factor();
      if (p.size() != 1 || q.size() != 1) {  // (a + b) * c: not an index we know
        ok_ = false;
        return {};
      }
      p[0].insert(p[0].end(), q[0].begin(), q[0].end());
    }
    return p;
  }

  bool type_word(std::size_t i) const {
    static const std::set<std::string_view> words = {
        "int", "unsigned", "long", "short", "size_t", "int64_t", "uint64_t", "int32_t",
        "uint32_t", "std", "signed", "ptrdiff_t", "const"};
    return i < end_ && ((s_.tokens[i].kind == cuda_token_kind::identifier && words.count(s_.text(i))) ||
                        s_.tokens[i].is_scope());
  }

  polynomial parenthesised() {
    if (!at('(')) {
      ok_ = false;
      return {};
    }
    ++i_;
    polynomial p = sum();
    if (!at(')')) ok_ = false;
    ++i_;
    return p;
  }

  polynomial factor() {
    if (!ok_ || i_ >= end_) {
      ok_ = false;
      return {};
    }
    if (s_.word(i_, "static_cast")) {
      ++i_;
      if (!at('<')) {
        ok_ = false;
        return {};
      }
      while (i_ < end_ && !at('>')) ++i_;
      ++i_;
      return parenthesised();
    }
    if (at('(')) {
      std::size_t j = i_ + 1;
      while (type_word(j)) ++j;
      if (j > i_ + 1 && j < end_ && s_.tokens[j].is(')')) {  // a C cast: (long long)x
        i_ = j + 1;
        return factor();
      }
      return parenthesised();
    }
    static const std::set<std::string_view> atoms = {"blockIdx", "blockDim", "threadIdx", "gridDim"};
    if (s_.tokens[i_].kind == cuda_token_kind::identifier && atoms.count(s_.text(i_)) &&
        at_dot_x(i_ + 1)) {
      polynomial p = {{std::string(s_.text(i_)) + ".x"}};
      i_ += 3;
      return p;
    }
    ok_ = false;
    return {};
  }

  bool at_dot_x(std::size_t i) const {
    return i + 1 < end_ && s_.tokens[i].is('.') && s_.word(i + 1, "x");
  }

  const parsed_source& s_;
  std::size_t i_, end_;
  bool ok_ = true;
};

}  // namespace

bool is_global_index(const parsed_source& s, token_range r) {
  const auto p = index_parser(s, r).parse();
  return p && *p == polynomial{{"blockDim.x", "blockIdx.x"}, {"threadIdx.x"}};
}

bool is_grid_stride(const parsed_source& s, token_range r) {
  const auto p = index_parser(s, r).parse();
  return p && *p == polynomial{{"blockDim.x", "gridDim.x"}};
}

bool has_grid_stride_loop(const parsed_source& s, const function_info& k) {
  bool strided = false;
  for (std::size_t i = k.body_open + 1; i + 1 < k.body_close && !strided; ++i) {
    if (!s.word(i, "for") || !s.tokens[i + 1].is('(')) continue;
    const std::size_t close = s.match(i + 1);
    if (close == none || close >= k.body_close) continue;
    std::vector<std::size_t> semis;
    for (std::size_t j = i + 2; j < close; ++j)
      if (s.tokens[j].is(';')) semis.push_back(j);
    if (semis.size() != 2) continue;
    std::size_t eq = none;
    for (std::size_t j = i + 2; j < semis[0]; ++j)
      if (s.tokens[j].is('=')) {
        eq = j;
        break;
      }
    // for (T i = <global index>; …; i += <grid stride>)
    const std::size_t inc = semis[1] + 1;
    const bool stride_ok = inc + 3 < close && s.tokens[inc + 1].is('+') && s.tokens[inc + 2].is('=') &&
                           eq != none && s.text(inc) == s.text(eq - 1) &&
                           is_grid_stride(s, {inc + 3, close});
    strided = stride_ok && is_global_index(s, {eq + 1, semis[0]});
  }
  return strided;
}

}  // namespace kblaster::engine::optimize::mech
