#pragma once

#include <cstddef>
#include <functional>

namespace dtrain::concurrency {

// Runs task(i) for i in [0, count) on up to `threads` threads (0: one per
// hardware thread), handing out indices one at a time so uneven tasks
// balance. Each task must write only its own outputs; results are then the
// same for any thread count. If tasks throw, the exception of the lowest
// failing index is rethrown after all threads have stopped.
void parallel_for(size_t count, int threads, const std::function<void(size_t)>& task);

// The thread count `threads` stands for (0: hardware concurrency, at least 1).
int resolve_thread_count(int threads);

}  // namespace dtrain::concurrency
