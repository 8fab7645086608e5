// Usage accounting and budgets.
#include "engine/llm/usage_ledger.h"

namespace kblaster::engine::llm {

usage_ledger::usage_ledger(std::int64_t budget_tokens, double budget_usd, double usd_per_mtok_in,
                           double usd_per_mtok_out)
    : budget_tokens_(budget_tokens), budget_usd_(budget_usd), in_price_(usd_per_mtok_in),
      out_price_(usd_per_mtok_out) {}

void usage_ledger::check_budget() const {
  std::lock_guard lock(mutex_);
  if (budget_tokens_ > 0 && total_.total_tokens() >= budget_tokens_)
    throw llm_error(error_kind::budget_exceeded,
                    "token budget spent: " + std::to_string(total_.total_tokens()) + " of " +
                        std::to_string(budget_tokens_) + " tokens used; the job stops here");
  if (budget_usd_ > 0 && total_.usd >= budget_usd_)
    throw llm_error(error_kind::budget_exceeded, "cost budget spent: $" + std::to_string(total_.usd) + " of $" +
                                                     std::to_string(budget_usd_) + "; the job stops here");
}

call_record usage_ledger::add(const std::string& role, const std::string& model, const token_usage& usage,
                              double latency_ms, int attempts) {
  call_record r{role, model, usage, latency_ms, attempts,
                (static_cast<double>(usage.prompt_tokens) * in_price_ +
                 static_cast<double>(usage.completion_tokens) * out_price_) / 1e6};
  std::lock_guard lock(mutex_);
  calls_.push_back(r);
  for (usage_totals* t : {&total_, &roles_[role]}) {
    ++t->calls;
    t->prompt_tokens += usage.prompt_tokens;
    t->completion_tokens += usage.completion_tokens;
    t->usd += r.usd;
  }
  return r;
}

usage_totals usage_ledger::totals() const {
  std::lock_guard lock(mutex_);
  return total_;
}

std::map<std::string, usage_totals> usage_ledger::by_role() const {
  std::lock_guard lock(mutex_);
  return roles_;
}

std::vector<call_record> usage_ledger::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

}  // namespace kblaster::engine::llm
