// The shared completion record behind a dtrain::Handle: the background thread completes or
// fails it; user threads poll or wait on it. The results are written before the status
// leaves kPending (under the mutex) and read after it has, so they need no lock of their own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "concurrency/mutex.h"
#include "dtrain/dtrain.h"

namespace dtrain::runtime {
class BackgroundLoop;
}

namespace dtrain::detail {

struct OpState {
  // `tensors`: how many must finish (a grouped allreduce has several).
  explicit OpState(int tensors = 1) : remaining(tensors) {}

  concurrency::Mutex mutex;
  concurrency::ConditionVariable finished;
  Status status DTRAIN_GUARDED_BY(mutex) = Status::kPending;
  std::string error DTRAIN_GUARDED_BY(mutex);
  bool workers_lost DTRAIN_GUARDED_BY(mutex) = false;  // failed because a peer was lost: wait() raises WorkersLostError
  int remaining DTRAIN_GUARDED_BY(mutex);              // tensors still to finish
  // The loop it was submitted to (the job's or a process set's), whose cycles a waiting
  // thread runs; set before submission, then only read.
  std::weak_ptr<runtime::BackgroundLoop> loop;

  // Results.
  TensorView output;
  std::vector<std::byte> owned_output;        // when no allocator was given
  std::shared_ptr<void> owned_device_output;  // the same, for CUDA tensors
  std::vector<std::int64_t> received_splits;
  int last_joined_rank = -1;

  // One tensor of the operation finished.
  void complete_one() {
    concurrency::MutexLock lock(mutex);
    if (status != Status::kPending) return;
    if (--remaining == 0) {
      status = Status::kDone;
      finished.notify_all();
    }
  }

  void fail(const std::string& message, bool lost_peer = false) {
    concurrency::MutexLock lock(mutex);
    if (status != Status::kPending) return;
    status = Status::kFailed;
    error = message;
    workers_lost = lost_peer;
    finished.notify_all();
  }

  // Returns once the status has left kPending; with `lock` on `mutex` held throughout.
  void wait_until_finished(concurrency::MutexLock& lock) DTRAIN_REQUIRES(mutex) {
    while (status == Status::kPending) finished.wait(lock);
  }
};

}  // namespace dtrain::detail
