#include "python/operation_table.h"

namespace dtrain::python {

int OperationTable::add(Operation operation) {
  concurrency::MutexLock lock(mutex_);
  const int handle = next_++;
  operations_.emplace(handle, std::make_shared<Operation>(std::move(operation)));
  return handle;
}

std::shared_ptr<Operation> OperationTable::find(int handle) const {
  concurrency::MutexLock lock(mutex_);
  const auto it = operations_.find(handle);
  return it == operations_.end() ? nullptr : it->second;
}

void OperationTable::remove(int handle) {
  concurrency::MutexLock lock(mutex_);
  operations_.erase(handle);
}

}  // namespace dtrain::python
