#include "python/completion_thread.h"

#include <Python.h>

#include <utility>

namespace dtrain::python {

CompletionThread::CompletionThread() : thread_([queue = queue_] { run(queue); }), thread_id_(thread_.get_id()) {}

CompletionThread::~CompletionThread() {
  {
    concurrency::MutexLock lock(queue_->mutex);
    queue_->stopping = true;
  }
  queue_->queued.notify_one();
  const bool on_nested = nested_ && std::this_thread::get_id() == nested_->thread_id_;
  if (std::this_thread::get_id() == thread_.get_id() || on_nested) {
    // The last reference went away in a callback this thread (or its nested one, which this
    // one may be waiting for) ran: it finishes the queue (its own reference keeps the queue)
    // and ends on its own.
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
  if (std::this_thread::get_id() == thread_id_) {
    if (!nested_) nested_ = std::make_unique<CompletionThread>();
    nested_->enqueue(std::move(finish));
    return;
  }
  {
    concurrency::MutexLock lock(queue_->mutex);
    queue_->pending.push_back(std::move(finish));
  }
  queue_->queued.notify_one();
}

void CompletionThread::run(const std::shared_ptr<Queue>& queue) {
  while (true) {
    std::function<void()> finish;
    {
      concurrency::MutexLock lock(queue->mutex);
      // The predicate runs with the mutex held (the wait takes it back first).
      queue->queued.wait(lock,
                         [&]() DTRAIN_REQUIRES(queue->mutex) { return queue->stopping || !queue->pending.empty(); });
      if (queue->pending.empty()) return;  // stopping, and nothing left
      finish = std::move(queue->pending.front());
      queue->pending.pop_front();
    }
    finish();
  }
}

}  // namespace dtrain::python
