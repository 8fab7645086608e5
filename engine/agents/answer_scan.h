// The answer parser's text tests, as linear scans. Each was a std::regex, given beside it; a
// scan finds exactly what the regex found (tests/unit/engine/agents/answer_scan_test.cpp checks
// each against its regex), without the backtracking and per-position restarts that made the
// parser take milliseconds on a long answer (the fuzzer ran it at 300 inputs a second).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kblaster::engine::agents::scan {

/// A Python function header: R"((^|\n)\s*def \w+\(.*\)\s*(->.*)?:)".
bool python_def(std::string_view text);

/// A text that is code from its first line: R"(^\s*(#include|#define|#pragma|//|/\*|extern\s|
/// template\s*<|__global__|__device__|namespace\s|static\s|constexpr\s|typedef\s|using\s|
/// struct\s|#if))".
bool starts_like_code(std::string_view text);

/// A line that declines, ignoring case: R"((^|\n)\s*(I'm sorry|I am sorry|Sorry,|I can(not|'t|’t)
/// (help|assist|comply|provide|do that|write)|I won'?t|I'm not able to|I am not able to|
/// I'm unable to|I am unable to|As an AI))" with std::regex::icase.
bool refusal(std::string_view text);

/// The name of every match of R"(__global__[^;{(]*?\b(\w+)\s*\()", in order.
std::vector<std::string> global_kernel_names(std::string_view code);

}  // namespace kblaster::engine::agents::scan
