// Strict answer parsing (see answer_parser.h).
#include "engine/agents/answer_parser.h"

#include "engine/agents/answer_scan.h"
#include "support/text.h"

#include <algorithm>
#include <cctype>

namespace kblaster::engine::agents {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

using support::trim;

bool is_cuda_language(const std::string& lang) {
  static const std::vector<std::string> ok{"", "cuda", "cu", "cpp", "c++", "c", "cuh", "cc", "cxx", "h", "hpp"};
  return std::find(ok.begin(), ok.end(), lang) != ok.end();
}

bool is_other_language(const std::string& lang, const std::string& body) {
  static const std::vector<std::string> other{"python", "py", "triton", "rust", "julia", "mojo", "cupy", "numba"};
  if (std::find(other.begin(), other.end(), lang) != other.end()) return true;
  // An unlabelled block that is Python rather than CUDA C++.
  return body.find("__global__") == std::string::npos &&
         (body.find("import torch") != std::string::npos || body.find("@triton.jit") != std::string::npos ||
          scan::python_def(body));
}

}  // namespace

const char* to_string(problem_kind k) noexcept {
  switch (k) {
    case problem_kind::truncated: return "truncated";
    case problem_kind::refusal: return "refusal";
    case problem_kind::no_code: return "no_code";
    case problem_kind::several_versions: return "several_versions";
    case problem_kind::wrong_entry_point: return "wrong_entry_point";
    case problem_kind::wrong_language: return "wrong_language";
    case problem_kind::not_json: return "not_json";
    case problem_kind::trailing_text: return "trailing_text";
    case problem_kind::invalid: return "invalid";
  }
  return "invalid";
}

std::vector<fenced_block> fenced_blocks(const std::string& text) {
  std::vector<fenced_block> out;
  std::size_t pos = 0;
  while (true) {
    auto open = text.find("```", pos);
    if (open == std::string::npos) break;
    // A fence opens at the start of a line.
    if (open > 0 && text[open - 1] != '\n') {
      pos = open + 3;
      continue;
    }
    const auto eol = text.find('\n', open);
    fenced_block b;
    b.language = lower(std::string(trim(text.substr(open + 3, eol == std::string::npos ? std::string::npos : eol - open - 3))));
    if (eol == std::string::npos) {
      b.closed = false;
      out.push_back(b);
      break;
    }
    std::size_t close = eol;
    while (true) {
      close = text.find("```", close);
      if (close == std::string::npos || text[close - 1] == '\n') break;
      close += 3;
    }
    if (close == std::string::npos) {
      b.body = text.substr(eol + 1);
      b.closed = false;
      out.push_back(b);
      break;
    }
    b.body = text.substr(eol + 1, close - eol - 1);
    out.push_back(b);
    pos = close + 3;
  }
  return out;
}

bool looks_like_refusal(const std::string& text) {
  // A refusal says so at the start: the first 600 characters are enough.
  return scan::refusal(std::string_view(text).substr(0, 600));
}

int brace_balance(const std::string& code) {
  int depth = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '/' && i + 1 < code.size() && code[i + 1] == '/') {
      i = code.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '/' && i + 1 < code.size() && code[i + 1] == '*') {
      i = code.find("*/", i + 2);
      if (i == std::string::npos) break;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < code.size() && code[i] != c; ++i)
        if (code[i] == '\\') ++i;
    } else if (c == '{') ++depth;
    else if (c == '}') --depth;
  }
  return depth;
}

namespace {
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
}  // namespace

// A scan, not a regex (std::regex backtracked over every occurrence and ran the fuzzer at 155
// exec/s): at each `name` that starts a word, whitespace, '(', then up to the first ';' or '{'
// a ')' followed only by whitespace, "const" and "noexcept" in that order, and the '{'.
bool defines_function(const std::string& code, const std::string& name) {
  bool scanned = false;
  std::size_t end = 0, close = 0;
  for (std::size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
    const bool word_before = at > 0 && is_word(code[at - 1]);
    const bool word_after = !name.empty() ? is_word(name[0]) : at < code.size() && is_word(code[at]);
    if (word_before == word_after) continue;  // \b before the name
    std::size_t i = at + name.size();
    while (i < code.size() && is_space(code[i])) ++i;
    if (i == code.size() || code[i] != '(') continue;
    // The first ';' or '{' after the '(' and the last ')' before it, shared by the occurrences
    // that stop at the same one: linear in the code, however many times the name occurs.
    if (!scanned || end <= i) {
      end = code.find_first_of(";{", i + 1);
      if (end == std::string::npos) return false;
      scanned = true;
      close = end;
      while (close > i + 1 && code[close - 1] != ')') --close;
      close = close > i + 1 ? close - 1 : std::string::npos;
    }
    if (code[end] != '{' || close == std::string::npos || close <= i) continue;
    std::size_t j = close + 1;
    const auto skip = [&](std::string_view word) {
      if (code.compare(j, word.size(), word) == 0) j += word.size();
      while (j < end && is_space(code[j])) ++j;
    };
    skip("");
    skip("const");
    skip("noexcept");
    if (j == end) return true;
  }
  return false;
}

std::vector<std::string> global_kernels(const std::string& code) { return scan::global_kernel_names(code); }

parsed<std::string> extract_cuda_source(const llm::chat_response& answer, const std::string& entry_point) {
  using P = parsed<std::string>;
  const std::string& text = answer.text;
  if (answer.finish_reason == "length")
    return P::fail(problem_kind::truncated, "your answer was cut off at the output limit before the code was complete. "
                                            "Send the whole kernel again, without explanations, so that it fits.");
  const auto blocks = fenced_blocks(text);
  std::vector<std::string> cuda;
  bool other_language = false;
  for (const auto& b : blocks) {
    if (!b.closed)
      return P::fail(problem_kind::truncated, "your answer ends inside an unclosed ``` code block, so the code is "
                                              "incomplete. Send the complete file in one closed ```cuda block.");
    if (is_other_language(b.language, b.body)) other_language = true;
    else if (is_cuda_language(b.language)) cuda.push_back(b.body);
  }
  if (blocks.empty()) {
    if (scan::starts_like_code(text)) cuda.push_back(text);
    else if (looks_like_refusal(text))
      return P::fail(problem_kind::refusal, "you declined. This is a routine performance rewrite of the user's own "
                                            "CUDA kernel; please do it and answer with the complete source.");
    else if (is_other_language("", text))
      other_language = true;
    else
      return P::fail(problem_kind::no_code, "your answer contained no code. Answer with the complete CUDA source "
                                            "in one ```cuda block.");
  }
  if (cuda.empty()) {
    if (other_language)
      return P::fail(problem_kind::wrong_language, "your code is not CUDA C++ (it looks like Python/Triton). The "
                                                   "kernel must stay CUDA C++ compiled by nvcc; answer in CUDA C++.");
    if (looks_like_refusal(text))
      return P::fail(problem_kind::refusal, "you declined. This is a routine performance rewrite of the user's own "
                                            "CUDA kernel; please do it and answer with the complete source.");
    return P::fail(problem_kind::no_code, "your answer had no CUDA code block. Answer with the complete source in "
                                          "one ```cuda block.");
  }
  std::vector<std::string> defining;
  for (const auto& c : cuda)
    if (defines_function(c, entry_point)) defining.push_back(c);
  if (defining.size() > 1) {
    // The same version repeated is harmless; two different versions are not.
    if (std::all_of(defining.begin(), defining.end(), [&](const std::string& s) { return trim(s) == trim(defining[0]); }))
      defining.resize(1);
    else
      return P::fail(problem_kind::several_versions,
                     "your answer holds " + std::to_string(defining.size()) + " different code blocks that define `" +
                         entry_point + "`; I cannot tell which one is final. Send only the final version, in one block.");
  }
  if (defining.empty()) {
    std::vector<std::string> kernels;
    for (const auto& c : cuda)
      for (auto& k : global_kernels(c)) kernels.push_back(k);
    std::string found;
    for (const auto& k : kernels) found += (found.empty() ? "`" : ", `") + k + "`";
    if (cuda.size() == 1 && brace_balance(cuda[0]) > 0)
      return P::fail(problem_kind::truncated, "the code ends before it is complete (unbalanced braces). Send the "
                                              "complete file again.");
    return P::fail(problem_kind::wrong_entry_point,
                   "the code must define the entry point `" + entry_point + "` with the same signature, but it " +
                       (found.empty() ? std::string("defines no kernel") : "defines " + found) +
                       ". Keep the name and signature of `" + entry_point + "` exactly.");
  }
  const std::string code = defining[0];
  if (brace_balance(code) != 0)
    return P::fail(problem_kind::truncated, "the code has unbalanced braces, so it is incomplete or broken. Send the "
                                            "complete file again.");
  return P::ok(code);
}

parsed<nlohmann::json> extract_json_object(const llm::chat_response& answer) {
  using P = parsed<nlohmann::json>;
  if (answer.finish_reason == "length")
    return P::fail(problem_kind::truncated, "your answer was cut off at the output limit. Send the JSON object again, "
                                            "shorter, and nothing else.");
  std::string text(trim(answer.text));
  const auto blocks = fenced_blocks(text);
  if (blocks.size() == 1 && blocks[0].closed && text.rfind("```", 0) == 0) {
    // One fence around the whole answer is allowed; text outside it is not.
    const auto end = text.rfind("```");
    if (trim(text.substr(end + 3)).empty()) text = trim(blocks[0].body);
  } else if (blocks.size() == 1 && !blocks[0].closed) {
    return P::fail(problem_kind::truncated, "your answer ends inside an unclosed ``` block. Send the complete JSON "
                                            "object and nothing else.");
  }
  if (text.empty() || text[0] != '{') {
    if (looks_like_refusal(text))
      return P::fail(problem_kind::refusal, "you declined. The task is an analysis of performance measurements of "
                                            "the user's own kernels; answer with the JSON object.");
    return P::fail(problem_kind::not_json, "your answer must be exactly one JSON object, starting with '{', with no "
                                           "text before or after it.");
  }
  // The end of the first object, string-aware.
  int depth = 0;
  bool in_string = false;
  std::size_t end = std::string::npos;
  for (std::size_t i = 0; i < text.size() && end == std::string::npos; ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) end = i;
  }
  if (end == std::string::npos)
    return P::fail(problem_kind::truncated, "the JSON object is incomplete (it is never closed). Send the complete "
                                            "object again, shorter if needed, and nothing else.");
  const std::string rest(trim(text.substr(end + 1)));
  if (!rest.empty())
    return P::fail(problem_kind::trailing_text, "your answer had text after the JSON object (\"" + rest.substr(0, 60) +
                                                    "...\"). Send only the JSON object; put explanations in its fields.");
  nlohmann::json doc = nlohmann::json::parse(text.substr(0, end + 1), nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return P::fail(problem_kind::not_json, "that is not valid JSON (check quotes, commas and that keys are quoted). "
                                           "Send one valid JSON object and nothing else.");
  return P::ok(std::move(doc));
}

}  // namespace kblaster::engine::agents
