// ProfileReport: what Nsight Compute measured, parsed by column name from its CSV pages. One
// kernel_instance per profiled launch, in launch order, with its launch configuration, every
// metric with its unit and every rule result.
#pragma once

#include <cstddef>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kblaster::engine {

/// A (x, y, z) extent as ncu prints it: "(256, 1, 1)".
struct dim3_value {
  long long x = 1, y = 1, z = 1;
  /// x * y * z, saturating: each is below 2^31 (parse_dim3), but their product need not fit.
  long long total() const {
    long long xy = 0, xyz = 0;
    if (__builtin_mul_overflow(x, y, &xy) || __builtin_mul_overflow(xy, z, &xyz)) return std::numeric_limits<long long>::max();
    return xyz;
  }
};

/// Parses "(256, 1, 1)"; nullopt when malformed.
std::optional<dim3_value> parse_dim3(std::string_view text);

/// One metric row: where ncu showed it and its value as printed and as a number.
struct metric {
  std::string section;  // "GPU Speed Of Light Throughput"
  std::string label;    // "Body Item Label" (empty when the column is absent or blank)
  std::string name;     // "DRAM Throughput" or a raw name such as "dram__throughput.avg.pct_of_peak_sustained_elapsed"
  std::string unit;     // "%", "us", "Kbyte", "" …
  std::string text;     // the value verbatim, e.g. "1,024" or "n/a"
  std::optional<double> value;  // text parsed as a number
};

/// One rule result (ncu's guided analysis).
struct rule_result {
  std::string section;       // "SourceCounters"
  std::string name;          // "UncoalescedGlobalAccess"
  std::string type;          // "OPT", "WRN", "INF" (or "ERR")
  std::string speedup_type;  // "global", "local" or empty
  std::optional<double> estimated_speedup;  // percent of the kernel's time
  std::string text;          // the rule's description
};

/// Launch configuration of one kernel instance.
struct launch_config {
  dim3_value block;
  dim3_value grid;
  std::optional<double> registers_per_thread;
  std::optional<double> static_shared_bytes;
  std::optional<double> dynamic_shared_bytes;
  std::optional<double> shared_config_bytes;  // the carveout the driver chose for this launch
  std::optional<double> sm_count;
  std::optional<double> waves_per_sm;
};

/// One profiled launch.
struct kernel_instance {
  long long id = 0;           // ncu's launch ID (launch order within the report)
  std::string name;           // as ncu printed it, e.g. "void matmul_tiled<32>(const float *, …)"
  std::string function;       // unqualified name without parameters or return type: "matmul_tiled<32>"
  std::string process;        // process name
  std::string device;         // device ordinal as printed
  std::string compute_capability;  // "9.0"
  launch_config launch;
  std::vector<metric> metrics;     // details page rows and raw page columns, in file order
  std::vector<rule_result> rules;  // in file order

  /// The first metric named `name` (preferring rows without a body item label); nullptr if none.
  const metric* find(std::string_view metric_name) const;
  /// The first metric named `name` in `section`; nullptr if none.
  const metric* find(std::string_view section, std::string_view metric_name) const;
  /// Numeric value of find(name), if any.
  std::optional<double> value(std::string_view metric_name) const;
  /// Numeric value of find(section, name), if any.
  std::optional<double> value(std::string_view section, std::string_view metric_name) const;
  /// Rules named `name`, in order.
  std::vector<const rule_result*> rules_named(std::string_view rule_name) const;

  /// Rebuilds the lookup index; parsers call it after appending metrics.
  void reindex();

 private:
  std::unordered_map<std::string, std::size_t> by_name_;
  std::unordered_map<std::string, std::size_t> by_section_name_;
};

/// A parsed report: every kernel instance in launch order.
struct profile_report {
  std::vector<kernel_instance> kernels;
  std::vector<std::string> warnings;  // e.g. "skipped 3 lines that are not part of the table"
};

}  // namespace kblaster::engine
