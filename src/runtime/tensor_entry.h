// One submitted tensor operation as the background thread holds it until it runs.
#pragma once

#include <chrono>
#include <cstdint>
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
  std::uint64_t record = ~std::uint64_t{0};  // its number in the flight recorder, once it left the queue
  // CUDA tensors: the event (a cudaEvent_t) after which the input may be read (gpu::capture_ready).
  std::shared_ptr<void> ready;
};

}  // namespace dtrain::runtime
