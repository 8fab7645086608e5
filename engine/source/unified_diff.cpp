// A line diff by Wu, Manber and Myers' O(NP) algorithm (Debian's libdtl): memory grows with the
// size of the change, not with the product of the two lengths, so a model's rewrite of a
// thousand-line file costs what its edit costs. The common head and tail are trimmed first.
#include "engine/source/unified_diff.h"

#include <dtl/dtl.hpp>

#include <algorithm>
#include <sstream>
#include <vector>

namespace kblaster::engine {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

struct diff_edit {
  char op;  // ' ', '-', '+'
  std::size_t a, b;  // line indices in before / after (valid for the sides the op uses)
};

std::vector<diff_edit> diff_lines(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  const std::vector<std::string> a_mid(a.begin() + static_cast<long>(head), a.end() - static_cast<long>(tail));
  const std::vector<std::string> b_mid(b.begin() + static_cast<long>(head), b.end() - static_cast<long>(tail));
  std::vector<diff_edit> out;
  for (std::size_t k = 0; k < head; ++k) out.push_back({' ', k, k});
  if (!a_mid.empty() || !b_mid.empty()) {
    dtl::Diff<std::string, std::vector<std::string>> diff(a_mid, b_mid);
    diff.onHuge();
    diff.compose();
    // Each edit carries both sides' current line, so that a hunk of insertions alone still
    // knows where it sits in the old text.
    std::size_t i = head, j = head;
    for (const auto& [line, info] : diff.getSes().getSequence()) {
      if (info.type == dtl::SES_COMMON) out.push_back({' ', i++, j++});
      else if (info.type == dtl::SES_DELETE) out.push_back({'-', i++, j});
      else out.push_back({'+', i, j++});
    }
  }
  for (std::size_t k = 0; k < tail; ++k) out.push_back({' ', a.size() - tail + k, b.size() - tail + k});
  // Deletions before insertions inside each changed run, as diff -u prints them.
  for (std::size_t s = 0; s < out.size();) {
    if (out[s].op == ' ') {
      ++s;
      continue;
    }
    std::size_t e = s;
    while (e < out.size() && out[e].op != ' ') ++e;
    std::stable_partition(out.begin() + static_cast<long>(s), out.begin() + static_cast<long>(e),
                          [](const diff_edit& x) { return x.op == '-'; });
    s = e;
  }
  return out;
}

std::string hunk_range(std::size_t start, std::size_t count) {
  // diff -u: a zero-length range names the line before it.
  std::string s = std::to_string(count == 0 ? start : start + 1);
  if (count != 1) s += "," + std::to_string(count);
  return s;
}

}  // namespace

std::string unified_diff(const std::string& before, const std::string& after, const std::string& before_label,
                         const std::string& after_label, int context) {
  if (before == after) return {};
  const auto a = lines_of(before), b = lines_of(after);
  const auto edits = diff_lines(a, b);
  const std::size_t ctx = static_cast<std::size_t>(std::max(context, 0));
  std::ostringstream out;
  out << "--- " << before_label << "\n+++ " << after_label << "\n";
  std::size_t i = 0;
  while (i < edits.size()) {
    while (i < edits.size() && edits[i].op == ' ') ++i;
    if (i == edits.size()) break;
    // Grow the hunk while changes are at most 2*ctx context lines apart.
    std::size_t start = i >= ctx ? i - ctx : 0, end = i;
    for (;;) {
      while (end < edits.size() && edits[end].op != ' ') ++end;
      std::size_t gap = end;
      while (gap < edits.size() && edits[gap].op == ' ') ++gap;
      if (gap < edits.size() && gap - end <= 2 * ctx) {
        end = gap;
        continue;
      }
      end = std::min(edits.size(), end + ctx);
      break;
    }
    std::size_t a_start = 0, b_start = 0, a_count = 0, b_count = 0;
    bool a_set = false, b_set = false;
    for (std::size_t k = start; k < end; ++k) {
      if (edits[k].op != '+') {
        if (!a_set) a_start = edits[k].a, a_set = true;
        ++a_count;
      }
      if (edits[k].op != '-') {
        if (!b_set) b_start = edits[k].b, b_set = true;
        ++b_count;
      }
    }
    if (!a_set) a_start = edits[start].a;
    if (!b_set) b_start = edits[start].b;
    out << "@@ -" << hunk_range(a_start, a_count) << " +" << hunk_range(b_start, b_count) << " @@\n";
    for (std::size_t k = start; k < end; ++k) {
      const auto& e = edits[k];
      out << e.op << (e.op == '+' ? b[e.b] : a[e.a]) << "\n";
    }
    i = end;
  }
  return out.str();
}

}  // namespace kblaster::engine
