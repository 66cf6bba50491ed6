// Reading files that other processes are still appending to (a job's logs and metrics.jsonl)
// in complete lines: a chunk ends after its last newline, so a line being written is left for
// the next read, and the caller resumes from `next`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dtrain::dashboard {

struct FileChunk {
  std::string text;   // whole lines, each ending in '\n'
  uint64_t next = 0;  // the offset to read from next time
  uint64_t size = 0;  // the file's size when read
  bool exists = false;
};

// Whole lines from `offset`, at most about `max_bytes` (a single longer line is returned whole
// up to 4 x max_bytes, then cut). Without an offset: the last `max_bytes`, from a line start.
// An offset beyond the end (the file was truncated and rewritten) starts again at 0.
FileChunk read_complete_lines(const std::string& path, std::optional<uint64_t> offset, uint64_t max_bytes);

}  // namespace dtrain::dashboard
