// Walking several tensors' memory as if it were one buffer.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "runtime/transport/transport.h"

namespace dtrain::runtime {

inline std::size_t total_count(const std::vector<BufferPiece>& pieces) {
  std::size_t count = 0;
  for (const auto& piece : pieces) count += piece.count;
  return count;
}

// Calls fn(pointer into a piece, position relative to `begin`, element count) for the parts of
// the concatenation of `pieces` that fall in the element range [begin, end).
template <typename Fn>
void for_each_part(const std::vector<BufferPiece>& pieces, std::size_t esize, std::size_t begin, std::size_t end,
                   Fn&& fn) {
  std::size_t piece_start = 0;
  for (const auto& piece : pieces) {
    const std::size_t piece_end = piece_start + piece.count;
    const std::size_t a = std::max(begin, piece_start), b = std::min(end, piece_end);
    if (a < b) fn(static_cast<char*>(piece.data) + (a - piece_start) * esize, a - begin, b - a);
    if (piece_end >= end) break;
    piece_start = piece_end;
  }
}

}  // namespace dtrain::runtime
