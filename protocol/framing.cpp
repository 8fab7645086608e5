// Content-Length framing: incremental reader and writer.
#include "protocol/framing.h"
#include "support/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kblaster::protocol {
namespace {

constexpr std::string_view header_end = "\r\n\r\n";
constexpr std::string_view length_field = "content-length";

// Header fields allow optional whitespace (spaces and tabs) around the value (RFC 9110).
std::string_view trim(std::string_view s) { return support::trim(s, " \t"); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Finds "Content-Length:" (any case) in `s` from `from` on. Not only at line starts: after a
// rejected header the next message may directly follow the stray body bytes.
std::size_t find_length_field(std::string_view s, std::size_t from) {
  for (std::size_t i = from; i + length_field.size() < s.size(); ++i) {
    if (iequals(s.substr(i, length_field.size()), length_field) && s[i + length_field.size()] == ':') return i;
  }
  return std::string_view::npos;
}

}  // namespace

void frame_reader::feed(std::string_view bytes) {
  if (skip_ > 0) {
    const std::size_t n = std::min(skip_, bytes.size());
    skip_ -= n;
    bytes.remove_prefix(n);
  }
  buffer_.append(bytes);
}

void frame_reader::compact() {
  // Keep the buffer from growing without bound while many messages pass through.
  if (start_ > 0 && (start_ >= buffer_.size() / 2 || start_ > (1u << 20))) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
}

void frame_reader::resync(std::size_t from) {
  resyncing_ = true;
  start_ += std::min(from, buffer_.size() - start_);
  try_resync();
}

bool frame_reader::try_resync() {
  const std::string_view rest = std::string_view(buffer_).substr(start_);
  const std::size_t at = find_length_field(rest, 0);
  if (at == std::string_view::npos) {
    // Keep a tail that could be the start of a split "Content-Length:".
    start_ = buffer_.size() - std::min(rest.size(), length_field.size());
    compact();
    return false;
  }
  start_ += at;
  resyncing_ = false;
  compact();
  return true;
}

std::optional<frame_event> frame_reader::parse_header() {
  const std::string_view rest = std::string_view(buffer_).substr(start_);
  const std::size_t end = rest.find(header_end);
  if (end == std::string_view::npos) {
    if (rest.size() > max_header) {
      resync(1);  // the bad header itself starts at 0
      return frame_event{frame_event::kind::header_error, "header longer than 8 KiB without a blank line"};
    }
    return std::nullopt;
  }

  std::optional<std::size_t> length;
  std::string error;
  std::size_t resume = end + header_end.size();  // where to look for the next header on error
  for (std::size_t line_start = 0; line_start < end && error.empty();) {
    std::size_t eol = rest.find("\r\n", line_start);
    if (eol == std::string_view::npos || eol > end) eol = end;
    const std::string_view line = rest.substr(line_start, eol - line_start);
    const std::size_t next_line = eol + 2;
    line_start = next_line;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      error = "header line without a colon";
    } else if (iequals(trim(line.substr(0, colon)), "content-length")) {
      const std::string_view value = trim(line.substr(colon + 1));
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
        error = "Content-Length is not a non-negative integer";
      else if (length && *length != n)
        error = "two different Content-Length headers";
      else
        length = n;
    }
    // Other headers (Content-Type, or ones a future spec adds) are allowed and ignored.
    // A bad line may be garbage in front of a real header: resume right after it.
    if (!error.empty()) resume = std::min(next_line, end + header_end.size());
  }
  if (error.empty() && !length) error = "header without Content-Length";

  if (!error.empty()) {
    // The body cannot be located; find the next header.
    start_ += resume;
    resync(0);
    return frame_event{frame_event::kind::header_error, error};
  }
  start_ += end + header_end.size();
  if (*length > max_body_) {
    // Skip the body by its declared length, including bytes not yet received.
    const std::size_t have = std::min(*length, buffer_.size() - start_);
    start_ += have;
    skip_ = *length - have;
    compact();
    return frame_event{frame_event::kind::header_error,
                       "Content-Length " + std::to_string(*length) + " exceeds the limit of " +
                           std::to_string(max_body_) + " bytes"};
  }
  body_length_ = length;
  return std::nullopt;
}

std::optional<frame_event> frame_reader::next() {
  if (resyncing_ && !try_resync()) return std::nullopt;
  if (!body_length_) {
    if (auto error = parse_header()) return error;
    if (!body_length_) return std::nullopt;
  }
  if (buffer_.size() - start_ < *body_length_) return std::nullopt;
  frame_event event{frame_event::kind::body, buffer_.substr(start_, *body_length_)};
  start_ += *body_length_;
  body_length_.reset();
  compact();
  return event;
}

std::string frame(std::string_view body) {
  std::string out = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace kblaster::protocol
