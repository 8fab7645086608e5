// Ranking of CUDA lines (or SASS instructions) by the costs ncu attributes to them.
#include "engine/profile/source_attribution.h"
#include "support/text.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>

namespace kblaster::engine {

const char* to_string(hot_reason r) {
  switch (r) {
    case hot_reason::stall_samples: return "stall_samples";
    case hot_reason::uncoalesced_global: return "uncoalesced_global";
    case hot_reason::shared_bank_conflicts: return "shared_bank_conflicts";
  }
  return "stall_samples";
}

namespace {

std::string trim(std::string_view s) { return std::string(support::trim(s, " \t")); }

std::string top_stall_of(const source_metrics& m) {
  std::string best;
  double most = 0;
  for (const auto& [name, v] : m.stalls)
    if (v > most) { most = v; best = name; }
  return best;
}

// The figure a reason ranks by.
double figure_of(hot_reason reason, const source_metrics& m) {
  switch (reason) {
    case hot_reason::stall_samples: return m.stall_samples;
    case hot_reason::uncoalesced_global: return m.global_excessive_sectors;
    case hot_reason::shared_bank_conflicts: return m.shared_excessive_wavefronts;
  }
  return 0;
}

std::uint64_t address_value(const std::string& address) { return std::strtoull(address.c_str(), nullptr, 16); }

// The block of the kernel's own file: the one holding its entry, the lowest instruction address
// (a kernel starts on its own line, never inside an inlined callee). Without SASS rows, the first
// block that is not the toolkit's.
const source_page* own_page(const std::vector<const source_page*>& pages) {
  const source_page* own = nullptr;
  std::uint64_t lowest = UINT64_MAX;
  for (const source_page* p : pages)
    for (const auto& i : p->instructions)
      if (const auto a = address_value(i.address); a != 0 && a < lowest) {
        lowest = a;
        own = p;
      }
  if (own) return own;
  for (const source_page* p : pages)
    if (!is_toolkit_source(p->file)) return p;
  return pages.empty() ? nullptr : pages.front();
}

// Where an instruction of another block (an inlined callee) comes from: "cuda_fp16.hpp:708".
using inlined_origins = std::map<std::uint64_t, std::string>;

inlined_origins origins_outside(const std::vector<const source_page*>& pages, const source_page* own) {
  inlined_origins out;
  for (const source_page* p : pages) {
    if (p == own) continue;
    const std::string file = std::filesystem::path(p->file).filename().string();
    for (const auto& i : p->instructions)
      if (i.line > 0) out.emplace(address_value(i.address), file + ":" + std::to_string(i.line));
  }
  return out;
}

// Says where most of a hot line's figure goes when that is inlined code from another file.
void mark_inlined(hot_line& h, const source_page& own, const inlined_origins& origins) {
  if (h.line <= 0 || h.amount <= 0 || origins.empty()) return;
  std::map<std::string, double> by_origin;
  for (const auto& i : own.instructions)
    if (i.line == h.line)
      if (const auto it = origins.find(address_value(i.address)); it != origins.end())
        by_origin[it->second] += figure_of(h.reason, i.metrics);
  const auto top = std::max_element(by_origin.begin(), by_origin.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
  // Half or more: below that, the line's own code is as much the story.
  if (top == by_origin.end() || top->second < 0.5 * h.amount) return;
  h.inlined_from = top->first;
  h.inlined_share = std::min(1.0, top->second / h.amount);
}

// One row to rank: a line or an instruction.
struct candidate {
  int line;
  std::string text;
  const source_metrics* metrics;
};

}  // namespace

std::vector<hot_line> attribute_hot_lines(const source_page& page, std::size_t per_reason,
                                          double min_share) {
  std::vector<candidate> rows;
  if (!page.lines.empty()) {
    for (const auto& l : page.lines) rows.push_back({l.line, trim(l.text), &l.metrics});
  } else {
    for (const auto& i : page.instructions) rows.push_back({i.line, trim(i.text), &i.metrics});
  }
  std::vector<hot_line> out;
  if (!page.has_metrics) return out;
  for (const hot_reason reason :
       {hot_reason::stall_samples, hot_reason::uncoalesced_global, hot_reason::shared_bank_conflicts}) {
    const auto figure = [reason](const source_metrics& m) { return figure_of(reason, m); };
    double total = 0;
    for (const auto& r : rows) total += figure(*r.metrics);
    if (total <= 0) continue;
    std::vector<const candidate*> ranked;
    for (const auto& r : rows) ranked.push_back(&r);
    std::stable_sort(ranked.begin(), ranked.end(), [&](const candidate* a, const candidate* b) {
      return figure(*a->metrics) > figure(*b->metrics);
    });
    std::size_t taken = 0;
    for (const candidate* r : ranked) {
      const double amount = figure(*r->metrics);
      if (taken >= per_reason || amount / total < min_share) break;
      out.push_back({page.file, r->line, r->text, reason, amount / total, amount,
                     top_stall_of(*r->metrics), {}, 0});
      ++taken;
    }
  }
  return out;
}

std::vector<hot_line> attribute_kernel_hot_lines(const std::vector<const source_page*>& pages_of_kernel,
                                                 std::size_t per_reason, double min_share) {
  const source_page* own = own_page(pages_of_kernel);
  if (!own) return {};
  auto out = attribute_hot_lines(*own, per_reason, min_share);
  const auto origins = origins_outside(pages_of_kernel, own);
  for (auto& h : out) mark_inlined(h, *own, origins);
  return out;
}

bool is_toolkit_source(std::string_view path) {
  for (std::string_view prefix : {"/usr/include/", "/usr/local/cuda", "/opt/cuda", "/opt/nvidia/"})
    if (path.starts_with(prefix)) return true;
  // A toolkit found elsewhere ($CUDA_HOME, a conda or pip install): its own layout gives it away.
  for (std::string_view part : {"/targets/x86_64-linux/include/", "/targets/sbsa-linux/include/",
                                "/targets/aarch64-linux/include/", "/nvidia/cuda_runtime/include/", "/include/cccl/"})
    if (path.find(part) != std::string_view::npos) return true;
  return false;
}

}  // namespace kblaster::engine
