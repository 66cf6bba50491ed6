// The shared completion record behind a dtrain::Handle: the background thread completes or
// fails it; user threads poll or wait on it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::detail {

struct OpState {
  std::mutex mutex;
  std::condition_variable finished;
  Status status = Status::kPending;
  std::string error;
  bool workers_lost = false;  // failed because a peer was lost: wait() raises WorkersLostError
  int remaining = 1;          // tensors still to finish (a grouped allreduce has several)

  // Results.
  TensorView output;
  std::vector<std::byte> owned_output;        // when no allocator was given
  std::shared_ptr<void> owned_device_output;  // the same, for CUDA tensors
  std::vector<std::int64_t> received_splits;
  int last_joined_rank = -1;

  // One tensor of the operation finished.
  void complete_one() {
    std::lock_guard lock(mutex);
    if (status != Status::kPending) return;
    if (--remaining == 0) {
      status = Status::kDone;
      finished.notify_all();
    }
  }

  void fail(const std::string& message, bool lost_peer = false) {
    std::lock_guard lock(mutex);
    if (status != Status::kPending) return;
    status = Status::kFailed;
    error = message;
    workers_lost = lost_peer;
    finished.notify_all();
  }
};

}  // namespace dtrain::detail
