#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace dtrain::launch {

// Turns one worker stream into prefixed lines. Bytes arrive in arbitrary
// chunks; every complete line is handed to the sink as one string
// "<prefix><line bytes>\n", so a single write() per line keeps lines from
// different ranks from interleaving. Bytes are passed through untouched
// (carriage returns, invalid UTF-8, NULs). A line longer than `max_line_bytes`
// is emitted in pieces, each piece prefixed and ended with a newline. A
// partial line left at the end is emitted by finish() with a newline added.
class LineRelay {
 public:
  using Sink = std::function<void(std::string_view prefixed_line)>;

  static constexpr size_t kDefaultMaxLineBytes = 64 * 1024;

  LineRelay(std::string prefix, Sink sink, size_t max_line_bytes = kDefaultMaxLineBytes);

  void feed(std::string_view bytes);
  void finish();

  const std::string& prefix() const { return prefix_; }

 private:
  void emit(std::string_view line_without_newline);

  std::string prefix_;
  Sink sink_;
  size_t max_line_bytes_;
  std::string pending_;  // bytes of the current, incomplete line
  std::string scratch_;  // reused to assemble prefix + line + '\n'
};

// "[<rank>]<stdout>:" / "[<rank>]<stderr>:"
std::string relay_prefix(int rank, std::string_view stream_name);

// "[<host>:<rank>]<stdout>:": the host as well, for jobs whose hosts matter
// to the reader (the job runner's logs and metrics).
std::string relay_prefix(int rank, std::string_view host, std::string_view stream_name);

}  // namespace dtrain::launch
