#include "python/completion_thread.h"

#include <Python.h>

#include <utility>

namespace dtrain::python {

CompletionThread::CompletionThread() : thread_([this] { run(); }) {}

CompletionThread::~CompletionThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_one();
  if (std::this_thread::get_id() == thread_.get_id()) {
    // The last reference went away in a callback this thread ran: it finishes the queue and
    // ends on its own.
    thread_.detach();
    return;
  }
  // Python drops the last reference with the GIL held, and what is still queued may run a
  // Python callback (a comm hook) that needs it: let go of it while the queue drains.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* saved = PyEval_SaveThread();
    thread_.join();
    PyEval_RestoreThread(saved);
  } else {
    thread_.join();
  }
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
