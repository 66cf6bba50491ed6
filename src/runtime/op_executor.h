// Runs the planned operations on this rank: stages tensors through the fusion buffer,
// applies scaling and averaging, calls the transport, allocates outputs, and completes or
// fails the handles of the tensors involved.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/flight_recorder.h"
#include "runtime/gpu/device_engine.h"
#include "runtime/message.h"
#include "runtime/tensor_entry.h"
#include "runtime/timeline.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class OpExecutor {
 public:
  // Creates the engine for CUDA tensors on this process's GPU (see make_device_engine).
  using DeviceEngineFactory = std::function<std::unique_ptr<DeviceEngine>(int device, HostRunner host)>;

  // `release` is called with each tensor's name just before its handle completes, so the
  // user may submit the name again as soon as the handle says it is done.
  OpExecutor(Transport& transport, Timeline* timeline, std::function<void(const std::string&)> release,
             DeviceEngineFactory make_device_engine)
      : transport_(transport),
        timeline_(timeline),
        release_(std::move(release)),
        make_device_engine_(std::move(make_device_engine)) {}

  void set_timeline(Timeline* timeline) { timeline_ = timeline; }  // nullptr: none
  void set_flight_recorder(FlightRecorder* recorder) { recorder_ = recorder; }

  // Runs `response`, removing the entries it finishes from `entries`. With `ridden`, an
  // allreduce of one host tensor whose every rank's prescaled data came on the cycle's
  // summaries (cycle_summary.h), in rank order: reduced here, with no exchange.
  void execute(const Response& response, std::unordered_map<std::string, TensorEntry>& entries,
               const std::vector<std::span<const char>>* ridden = nullptr);

  // Throws if GPU work handed over earlier has failed (DeviceEngine::check_health).
  void check_device_health() {
    if (device_engine_) device_engine_->check_health();
  }

 private:
  // The data movement of `response` on the host path (tensors in host memory).
  void run_on_host(const Response& response, std::vector<TensorEntry*>& tensors);
  // The same on CUDA tensors, through the device engine (created at the first one).
  void run_on_device(const Response& response, std::vector<TensorEntry*>& tensors);

  void allreduce(const Response& response, std::vector<TensorEntry*>& tensors);
  void reduce_ridden(const Response& response, TensorEntry& entry, const std::vector<std::span<const char>>& by_rank);
  void allgather(const Response& response, TensorEntry& entry);
  void broadcast(const Response& response, TensorEntry& entry);
  void alltoall(const Response& response, TensorEntry& entry);
  void reducescatter(const Response& response, TensorEntry& entry);

  // The flight recorder's note of each tensor's progress (before `entries` lets them go).
  void note_started(const std::vector<TensorEntry*>& tensors);
  void note_finished(const std::vector<TensorEntry*>& tensors, bool ok);
  void activity_begin(const Response& response, const char* activity);
  void activity_end(const Response& response);

  Transport& transport_;
  Timeline* timeline_;
  FlightRecorder* recorder_ = nullptr;
  std::function<void(const std::string&)> release_;
  DeviceEngineFactory make_device_engine_;
  std::unique_ptr<DeviceEngine> device_engine_;
  int device_ = -1;  // the GPU of device_engine_
  std::vector<std::byte> fusion_buffer_;
  std::vector<const void*> ridden_contributions_;  // by rank, for reduce_ridden: kept, so it allocates once
};

// Memory for an output of `shape`: from the caller's allocator, else owned by the handle (on
// the input's device).
void* allocate_output(TensorEntry& entry, const std::vector<std::int64_t>& shape);

}  // namespace dtrain::runtime
