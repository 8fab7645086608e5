// Content-Length framing: incremental reader and writer.
#include "protocol/framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace kblaster::protocol {
namespace {

constexpr std::string_view header_end = "\r\n\r\n";
constexpr std::string_view length_field = "content-length";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Finds "Content-Length:" (any case) at the start of a line in `s`, from `from` on.
std::size_t find_length_line(std::string_view s, std::size_t from) {
  for (std::size_t i = from; i + length_field.size() < s.size(); ++i) {
    if (i != 0 && s[i - 1] != '\n') continue;
    if (iequals(s.substr(i, length_field.size()), length_field) && s[i + length_field.size()] == ':')
      return i;
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
  const std::string_view rest = std::string_view(buffer_).substr(start_);
  const std::size_t at = find_length_line(rest, from);
  if (at == std::string_view::npos) {
    // Keep a tail that could be the start of a split "Content-Length:".
    const std::size_t keep = std::min(rest.size(), length_field.size());
    start_ = buffer_.size() - keep;
  } else {
    start_ += at;
  }
  compact();
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
  std::string_view block = rest.substr(0, end);
  while (!block.empty() && error.empty()) {
    const std::size_t eol = block.find("\r\n");
    const std::string_view line = block.substr(0, eol);
    block = eol == std::string_view::npos ? std::string_view() : block.substr(eol + 2);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      error = "header line without a colon";
      break;
    }
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "content-length")) {
      std::size_t n = 0;
      const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
        error = "Content-Length is not a non-negative integer";
      else if (length && *length != n)
        error = "two different Content-Length headers";
      else
        length = n;
    } else if (!iequals(name, "content-type")) {
      // Unknown headers are allowed by the spec's spirit of extensibility; ignore them.
    }
  }
  if (error.empty() && !length) error = "header without Content-Length";

  if (!error.empty()) {
    // The body cannot be located; drop the header and find the next one.
    start_ += end + header_end.size();
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
