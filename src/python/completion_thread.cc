#include "python/completion_thread.h"

#include <utility>

namespace dtrain::python {

CompletionThread::CompletionThread() : thread_([this] { run(); }) {}

CompletionThread::~CompletionThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  thread_.join();
}

void CompletionThread::enqueue(std::function<void()> finish) {
  {
    std::lock_guard lock(mutex_);
    pending_.push_back(std::move(finish));
  }
  queued_.notify_one();
}

void CompletionThread::run() {
  while (true) {
    std::function<void()> finish;
    {
      std::unique_lock lock(mutex_);
      queued_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
      if (pending_.empty()) return;  // stopping, and nothing left
      finish = std::move(pending_.front());
      pending_.pop_front();
    }
    finish();
  }
}

}  // namespace dtrain::python
