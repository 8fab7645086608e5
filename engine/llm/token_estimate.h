// A tokenizer-free estimate of how many tokens a text costs, for prompt budgets and for calls
// whose endpoint reports no usage.
#pragma once

#include <cstdint>
#include <string_view>

namespace kblaster::engine::llm {

/// Estimated BPE tokens of `text`: a word of up to 6 letters is one token and longer ones one
/// per 4 letters, digits one per 3, every other visible character one, a run of whitespace
/// with a newline one. On English prose this is close to cl100k's count; on CUDA it errs high
/// (symbols such as "->" or "){" often merge into one token), which is the safe side for a budget.
std::int64_t estimate_tokens(std::string_view text) noexcept;

}  // namespace kblaster::engine::llm
