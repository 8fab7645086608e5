// Token usage per call and per agent role, and the job's budgets. A spent budget makes the next
// call throw llm_error(budget_exceeded) before anything is sent, so a job stops between calls,
// never in the middle of one.
#pragma once

#include "engine/llm/llm_types.h"

#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kblaster::engine::llm {

/// One finished call, as the ledger keeps it.
struct call_record {
  std::string role;
  std::string model;
  token_usage usage;
  double latency_ms = 0;
  int attempts = 1;
  double usd = 0;
};

/// Totals for one role (or for the job).
struct usage_totals {
  std::int64_t calls = 0, prompt_tokens = 0, completion_tokens = 0;
  double usd = 0;
  std::int64_t total_tokens() const noexcept { return prompt_tokens + completion_tokens; }
};

/// Thread-safe record of a job's calls with its budgets (0: unlimited).
class usage_ledger {
 public:
  usage_ledger(std::int64_t budget_tokens = 0, double budget_usd = 0, double usd_per_mtok_in = 0,
               double usd_per_mtok_out = 0);

  /// Throws llm_error(budget_exceeded) when a budget is already spent.
  void check_budget() const;
  /// Adds a finished call; returns its record (with its cost).
  call_record add(const std::string& role, const std::string& model, const token_usage& usage,
                  double latency_ms, int attempts);

  usage_totals totals() const;
  std::map<std::string, usage_totals> by_role() const;
  std::vector<call_record> calls() const;

 private:
  mutable std::mutex mutex_;
  std::int64_t budget_tokens_;
  double budget_usd_, in_price_, out_price_;
  std::vector<call_record> calls_;
  usage_totals total_;
  std::map<std::string, usage_totals> roles_;
};

}  // namespace kblaster::engine::llm
