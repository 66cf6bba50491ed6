// Runs the planned operations on this rank: stages tensors through the fusion buffer,
// applies scaling and averaging, calls the transport, allocates outputs, and completes or
// fails the handles of the tensors involved.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/message.h"
#include "runtime/tensor_entry.h"
#include "runtime/timeline.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class OpExecutor {
 public:
  // `release` is called with each tensor's name just before its handle completes, so the
  // user may submit the name again as soon as the handle says it is done.
  OpExecutor(Transport& transport, Timeline* timeline, std::function<void(const std::string&)> release)
      : transport_(transport), timeline_(timeline), release_(std::move(release)) {}

  void set_timeline(Timeline* timeline) { timeline_ = timeline; }  // nullptr: none

  // Runs `response`, removing the entries it finishes from `entries`.
  void execute(const Response& response, std::unordered_map<std::string, TensorEntry>& entries);

 private:
  void allreduce(const Response& response, std::vector<TensorEntry*>& tensors);
  void allgather(const Response& response, TensorEntry& entry);
  void broadcast(const Response& response, TensorEntry& entry);
  void alltoall(const Response& response, TensorEntry& entry);
  void reducescatter(const Response& response, TensorEntry& entry);

  void activity_begin(const Response& response, const char* activity);
  void activity_end(const Response& response);

  Transport& transport_;
  Timeline* timeline_;
  std::function<void(const std::string&)> release_;
  std::vector<std::byte> fusion_buffer_;
};

// Memory for an output of `shape`: from the caller's allocator, else owned by the handle.
void* allocate_output(TensorEntry& entry, const std::vector<std::int64_t>& shape);

}  // namespace dtrain::runtime
