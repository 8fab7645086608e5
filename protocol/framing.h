// LSP base protocol framing: "Content-Length: N\r\n[Content-Type: ...\r\n]\r\n" + N bytes.
//
// frame_reader is fed bytes as they arrive, split anywhere, and hands out whole bodies or
// header errors. A bad header never stalls the stream: an oversized body is skipped by its
// declared length, and a header without a usable length is dropped up to the next line that
// starts "Content-Length:", so the reader finds its place again.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kblaster::protocol {

/// What the reader produced: a message body, or a header it had to reject.
struct frame_event {
  enum class kind { body, header_error } what;
  std::string text;  // the body, or a one-line description of the error
};

/// Incremental Content-Length frame decoder. Not thread-safe; one per connection.
class frame_reader {
 public:
  static constexpr std::size_t default_max_body = 64u << 20;  // 64 MiB
  // A header block longer than this is garbage: real clients send under 100 bytes.
  static constexpr std::size_t max_header = 8u << 10;

  explicit frame_reader(std::size_t max_body = default_max_body) : max_body_(max_body) {}

  /// Appends bytes from the stream.
  void feed(std::string_view bytes);

  /// The next complete event, or nothing until more bytes are fed.
  std::optional<frame_event> next();

  /// Bytes held that do not yet form an event (for tests and memory accounting).
  std::size_t buffered() const noexcept { return buffer_.size() - start_; }

 private:
  std::optional<frame_event> parse_header();
  void compact();
  // After a rejected header: drops bytes up to the next "Content-Length:", searching from
  // `from` bytes past the current position, now or once more bytes arrive.
  void resync(std::size_t from);
  bool try_resync();

  std::string buffer_;
  std::size_t start_ = 0;             // consumed prefix of buffer_
  std::size_t max_body_;
  std::optional<std::size_t> body_length_;  // set once a header was accepted
  bool resyncing_ = false;             // looking for the next "Content-Length:"
  std::size_t skip_ = 0;               // bytes of an oversized body still to discard
};

/// Frames one body for writing.
std::string frame(std::string_view body);

}  // namespace kblaster::protocol
