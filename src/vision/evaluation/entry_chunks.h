#pragma once

// Reading a COCO JSON list's entries on several threads with the error a
// single thread would report. Private to dtrain_coco_eval.
#include <algorithm>
#include <cstddef>

#include "concurrency/parallel_for.h"

namespace dtrain::vision {

// Entries read by one task: a few milliseconds of parsing or RLE decoding.
constexpr size_t kEntriesPerTask = 2048;

// Runs read(i) for every entry index on `threads` threads, in contiguous
// chunks that each stop at their first error, so the error rethrown (that of
// the lowest failing chunk) is the first bad entry in file order, whatever
// the thread count.
template <typename Read>
void for_each_entry(size_t entries, int threads, const Read& read) {
  const size_t tasks = (entries + kEntriesPerTask - 1) / kEntriesPerTask;
  concurrency::parallel_for(tasks, threads, [&](size_t task) {
    const size_t end = std::min(entries, (task + 1) * kEntriesPerTask);
    for (size_t i = task * kEntriesPerTask; i < end; ++i) read(i);
  });
}

}  // namespace dtrain::vision
