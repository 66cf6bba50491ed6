#include "dashboard/file_chunk.h"

#include <fstream>

namespace dtrain::dashboard {
namespace {

std::string read_range(std::ifstream& in, uint64_t offset, uint64_t length) {
  std::string bytes(length, '\0');
  in.clear();  // a read that reached the end set eofbit, which would fail the seek
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(length));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

}  // namespace

FileChunk read_complete_lines(const std::string& path, std::optional<uint64_t> offset, uint64_t max_bytes) {
  FileChunk chunk;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return chunk;
  chunk.exists = true;
  chunk.size = static_cast<uint64_t>(in.tellg());
  uint64_t start = 0;
  bool skip_partial_first_line = false;
  if (!offset) {
    start = chunk.size > max_bytes ? chunk.size - max_bytes : 0;
    skip_partial_first_line = start > 0;
  } else {
    start = *offset <= chunk.size ? *offset : 0;
  }
  const uint64_t available = chunk.size - start;
  std::string bytes = read_range(in, start, std::min(available, max_bytes));
  if (skip_partial_first_line) {
    const size_t first_newline = bytes.find('\n');
    const size_t cut = first_newline == std::string::npos ? bytes.size() : first_newline + 1;
    bytes.erase(0, cut);
    start += cut;
  }
  size_t last_newline = bytes.rfind('\n');
  if (last_newline == std::string::npos && available > bytes.size()) {
    // One line longer than max_bytes: read on to its end, within bounds.
    bytes = read_range(in, start, std::min(available, 4 * max_bytes));
    last_newline = bytes.find('\n');
    if (last_newline == std::string::npos && available > bytes.size()) last_newline = bytes.size() - 1;
  }
  const size_t keep = last_newline == std::string::npos ? 0 : last_newline + 1;
  bytes.resize(keep);
  chunk.next = start + keep;
  chunk.text = std::move(bytes);
  return chunk;
}

}  // namespace dtrain::dashboard
