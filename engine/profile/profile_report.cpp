// Lookups on kernel instances and small helpers of the profile model.
#include "engine/profile/profile_report.h"


namespace kblaster::engine {

std::optional<dim3_value> parse_dim3(std::string_view text) {
  // "(256, 1, 1)"; older versions also print a bare "256".
  long long v[3] = {1, 1, 1};
  int n = 0;
  std::size_t i = 0;
  while (i < text.size() && n < 3) {
    if (text[i] >= '0' && text[i] <= '9') {
      // A CUDA dimension is below 2^31; more digits than that is no dimension (and would overflow).
      constexpr long long limit = (1LL << 31) - 1;
      long long x = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        x = x * 10 + (text[i++] - '0');
        if (x > limit) return std::nullopt;
      }
      v[n++] = x;
    } else if (text[i] == ',' || text[i] == ' ' || text[i] == '(' || text[i] == ')') {
      ++i;
    } else {
      return std::nullopt;
    }
  }
  if (n == 0) return std::nullopt;
  return dim3_value{v[0], v[1], v[2]};
}

void kernel_instance::reindex() {
  by_name_.clear();
  by_section_name_.clear();
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const auto& m = metrics[i];
    auto it = by_name_.find(m.name);
    // Prefer the section's own row over the same name repeated inside a body item (a chart).
    if (it == by_name_.end()) by_name_.emplace(m.name, i);
    else if (!metrics[it->second].label.empty() && m.label.empty()) it->second = i;
    by_section_name_.emplace(m.section + '\x1f' + m.name, i);
  }
}

const metric* kernel_instance::find(std::string_view metric_name) const {
  auto it = by_name_.find(std::string(metric_name));
  return it == by_name_.end() ? nullptr : &metrics[it->second];
}

const metric* kernel_instance::find(std::string_view section, std::string_view metric_name) const {
  std::string key(section);
  key += '\x1f';
  key += metric_name;
  auto it = by_section_name_.find(key);
  return it == by_section_name_.end() ? nullptr : &metrics[it->second];
}

std::optional<double> kernel_instance::value(std::string_view metric_name) const {
  const metric* m = find(metric_name);
  return m ? m->value : std::nullopt;
}

std::optional<double> kernel_instance::value(std::string_view section, std::string_view metric_name) const {
  const metric* m = find(section, metric_name);
  return m ? m->value : std::nullopt;
}

std::vector<const rule_result*> kernel_instance::rules_named(std::string_view rule_name) const {
  std::vector<const rule_result*> out;
  for (const auto& r : rules)
    if (r.name == rule_name) out.push_back(&r);
  return out;
}

}  // namespace kblaster::engine
