#pragma once

// The asynchronous operations a Python program has in flight, by the integer handle Horovod's
// API gives it (`handle = hvd.allreduce_async(t)`, later `hvd.synchronize(handle)`). Hooks on
// autograd's threads submit while the main thread waits, so every access is locked. An entry
// holds the operation's tensors (through the adapter's handles) until it is taken out: a
// tensor the program dropped stays alive while the runtime may still read or write it.
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

#include "concurrency/mutex.h"
#include "dtrain/torch.h"

namespace dtrain::python {

// One submitted operation: a single-tensor one, or a grouped allreduce.
struct Operation {
  std::variant<libtorch::TensorHandle, libtorch::TensorGroupHandle> handle;
  bool returns_splits = false;  // alltoall: the result comes with the rows received from each rank
};

class OperationTable {
 public:
  // Stores the operation; returns its handle (never reused within the process).
  int add(Operation operation);
  // The operation behind `handle`, still stored; nullptr for a handle never given or taken.
  std::shared_ptr<Operation> find(int handle) const;
  // Removes `handle` (after its wait, successful or not).
  void remove(int handle);

 private:
  mutable concurrency::Mutex mutex_;
  int next_ DTRAIN_GUARDED_BY(mutex_) = 1;
  std::unordered_map<int, std::shared_ptr<Operation>> operations_ DTRAIN_GUARDED_BY(mutex_);
};

}  // namespace dtrain::python
