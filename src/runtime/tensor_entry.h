// One submitted tensor operation as the background thread holds it until it runs.
#pragma once

#include <chrono>
#include <memory>

#include "runtime/message.h"
#include "runtime/op_state.h"

namespace dtrain::runtime {

struct TensorEntry {
  Request request;
  TensorView input;
  TensorView output;
  OutputAllocator allocate;
  std::shared_ptr<detail::OpState> state;
  std::chrono::steady_clock::time_point submitted;
};

}  // namespace dtrain::runtime
