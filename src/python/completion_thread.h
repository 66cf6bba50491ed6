#pragma once

// One thread that finishes a process group's operations in the order they are handed to it: it
// waits for each, copies its results where PyTorch expects them and completes its future, so
// the callbacks chained on that future (DDP's comm hooks) run there too, never on the
// runtime's background thread. In order, because c10d's futures complete in the order their
// operations were issued (DDP's buckets); the runtime may finish them in another.
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "concurrency/mutex.h"

namespace dtrain::python {

class CompletionThread {
 public:
  CompletionThread();
  // Finishes what was queued (without the GIL, if the caller held it), then joins.
  ~CompletionThread();
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  // Runs `finish` after everything queued before it. It must not throw. Queued from this
  // thread itself (by a callback it runs: a comm hook that starts a collective and waits for it,
  // as PyTorch's PowerSGD hook does), `finish` goes to a nested completion thread instead, since
  // this one is busy in that callback until `finish` has run.
  void enqueue(std::function<void()> finish);

 private:
  // Shared with the thread, which may outlive this object: when the last reference goes away
  // in a callback the thread itself runs, the thread drains the queue after the destructor.
  struct Queue {
    concurrency::Mutex mutex;
    concurrency::ConditionVariable queued;
    std::deque<std::function<void()>> pending DTRAIN_GUARDED_BY(mutex);
    bool stopping DTRAIN_GUARDED_BY(mutex) = false;
  };
  static void run(const std::shared_ptr<Queue>& queue);

  std::shared_ptr<Queue> queue_ = std::make_shared<Queue>();
  std::thread thread_;
  std::thread::id thread_id_;
  // Made by the first enqueue() from this thread; only this thread touches it until the join.
  std::unique_ptr<CompletionThread> nested_;
};

}  // namespace dtrain::python
