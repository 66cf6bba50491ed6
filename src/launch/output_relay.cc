#include "launch/output_relay.h"

#include <fmt/format.h>

namespace dtrain::launch {

LineRelay::LineRelay(std::string prefix, Sink sink, size_t max_line_bytes)
    : prefix_(std::move(prefix)), sink_(std::move(sink)), max_line_bytes_(max_line_bytes == 0 ? 1 : max_line_bytes) {}

void LineRelay::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    std::string_view chunk = bytes.substr(0, newline);
    bool complete = newline != std::string_view::npos;
    bytes.remove_prefix(complete ? newline + 1 : bytes.size());

    // Flush full pieces of an over-long line as they accumulate.
    while (pending_.size() + chunk.size() > max_line_bytes_) {
      size_t take = max_line_bytes_ - pending_.size();
      pending_.append(chunk.substr(0, take));
      chunk.remove_prefix(take);
      emit(pending_);
      pending_.clear();
    }
    if (complete) {
      if (pending_.empty()) {
        emit(chunk);
      } else {
        pending_.append(chunk);
        emit(pending_);
        pending_.clear();
      }
    } else {
      pending_.append(chunk);
    }
  }
}

void LineRelay::finish() {
  if (!pending_.empty()) {
    emit(pending_);
    pending_.clear();
  }
}

void LineRelay::emit(std::string_view line) {
  scratch_.clear();
  scratch_.reserve(prefix_.size() + line.size() + 1);
  scratch_.append(prefix_);
  scratch_.append(line);
  scratch_.push_back('\n');
  sink_(scratch_);
}

std::string relay_prefix(int rank, std::string_view stream_name) { return fmt::format("[{}]<{}>:", rank, stream_name); }

std::string relay_prefix(int rank, std::string_view host, std::string_view stream_name) {
  return fmt::format("[{}:{}]<{}>:", host, rank, stream_name);
}

}  // namespace dtrain::launch
