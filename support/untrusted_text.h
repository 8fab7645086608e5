// Text a candidate controls (the message of an exception it threw, what it printed, what it left
// in a crash), as it enters a reason, a verdict or a model's prompt: bounded and marked as the
// candidate's, in one place. A candidate once read a file it should not have seen and threw its
// contents; the text came back verbatim in the reason, reaching the editor and the next
// (repair) prompt. The sandbox keeps such files out of its sight; this keeps whatever it says
// short, free of terminal escapes, and never mistaken for KernelBlaster's own words.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kblaster::support {

/// How much of a candidate's text reaches a reason or a prompt.
inline constexpr std::size_t candidate_text_limit = 2048;  // bytes

/// Which end of a long text is kept: a message's start, an output's (or a crash's) end.
enum class keep_end { head, tail };

/// `text` at most `limit` bytes long (cut at a character boundary, "[... N bytes cut]" saying
/// how much went), its control characters but newline and tab shown as '?', marked:
/// `the candidate's own message (untrusted): "..."`. `what` names the text ("message",
/// "output"); empty text gives an empty string.
inline std::string candidate_text(std::string_view text, std::string_view what = "message",
                                  std::size_t limit = candidate_text_limit, keep_end keep = keep_end::head) {
  if (text.empty()) return {};
  const std::size_t cut = text.size() > limit ? text.size() - limit : 0;
  std::size_t from = keep == keep_end::tail ? cut : 0;
  std::size_t to = keep == keep_end::tail ? text.size() : text.size() - cut;
  // Never half a UTF-8 sequence at either end: continuation bytes are 10xxxxxx.
  auto continuation = [&](std::size_t i) { return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  while (from < to && continuation(from)) ++from;
  while (to > from && to < text.size() && continuation(to)) --to;
  std::string body;
  body.reserve(to - from);
  for (const char c : text.substr(from, to - from)) {
    const auto u = static_cast<unsigned char>(c);
    body += (u < 0x20 && c != '\n' && c != '\t') || u == 0x7F ? '?' : c;  // no ESC: no terminal tricks
  }
  const std::size_t dropped = text.size() - (to - from);
  std::string out = "the candidate's own " + std::string(what) + " (untrusted): \"";
  if (dropped && keep == keep_end::tail) out += "[... " + std::to_string(dropped) + " bytes cut] ";
  out += body + "\"";
  if (dropped && keep == keep_end::head) out += " [... " + std::to_string(dropped) + " bytes cut]";
  return out;
}

}  // namespace kblaster::support
