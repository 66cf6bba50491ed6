#include "concurrency/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

#include "concurrency/mutex.h"

namespace dtrain::concurrency {

int resolve_thread_count(int threads) {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void parallel_for(size_t count, int threads, const std::function<void(size_t)>& task) {
  const size_t workers = std::min<size_t>(static_cast<size_t>(resolve_thread_count(threads)), count);
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) task(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  // The exception of the lowest failing index, whichever thread met it.
  struct FirstError {
    Mutex mutex;
    size_t index DTRAIN_GUARDED_BY(mutex);
    std::exception_ptr error DTRAIN_GUARDED_BY(mutex);
  } first_error{{}, count, {}};

  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count || failed.load(std::memory_order_relaxed)) return;
      try {
        task(i);
      } catch (...) {
        MutexLock lock(first_error.mutex);
        if (i < first_error.index) {
          first_error.index = i;
          first_error.error = std::current_exception();
        }
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& thread : pool) thread.join();
  MutexLock lock(first_error.mutex);  // no other thread is left: taken for the analysis alone
  if (first_error.error) std::rethrow_exception(first_error.error);
}

}  // namespace dtrain::concurrency
