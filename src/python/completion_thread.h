#pragma once

// One thread that finishes a process group's operations in the order they are handed to it: it
// waits for each, copies its results where PyTorch expects them and completes its future, so
// the callbacks chained on that future (DDP's comm hooks) run there too, never on the
// runtime's background thread. In order, because c10d's futures complete in the order their
// operations were issued (DDP's buckets); the runtime may finish them in another.
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace dtrain::python {

class CompletionThread {
 public:
  CompletionThread();
  // Finishes what was queued (without the GIL, if the caller held it), then joins.
  ~CompletionThread();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  // Runs `finish` after everything queued before it. It must not throw.
  void enqueue(std::function<void()> finish);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable queued_;
  std::deque<std::function<void()>> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dtrain::python
