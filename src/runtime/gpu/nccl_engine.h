// Collectives on CUDA memory through NCCL, on a stream of the engine's own (one communicator
// for this process's one GPU, created when the engine is).
//
// Each operation waits on its inputs' ready events, is queued on the engine's stream (fused
// allreduces packed by one batched copy launch, scaling by kernels), and ends with an event
// every caller's stream waits on: the CPU never waits for the GPU. The communicator is
// non-blocking, so no NCCL call can hang the thread that runs the negotiation: each call is
// followed until NCCL says it is done, within the job's timeout (DTRAIN_TIMEOUT_S), and an
// error, or a peer NCCL reports lost, aborts the communicator and fails this and every later
// operation with a message naming the call.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <string>

#include "runtime/gpu/device_engine.h"

namespace dtrain::runtime {

class NcclEngine final : public DeviceEngine {
 public:
  // Collective: rank 0 makes the communicator's id and sends it over `transport`.
  NcclEngine(Transport& transport, int device, std::chrono::milliseconds timeout);
  ~NcclEngine() override;
  NcclEngine(const NcclEngine&) = delete;
  NcclEngine& operator=(const NcclEngine&) = delete;

  const char* name() const override { return "nccl"; }
  int device() const override { return device_; }
  void execute(const Response& response, std::vector<TensorEntry*>& tensors) override;
  void check_health() override;

 private:
  void allreduce(const Response& response, std::vector<TensorEntry*>& tensors);
  void allgather(const Response& response, TensorEntry& entry);
  void broadcast(const Response& response, TensorEntry& entry);
  void alltoall(const Response& response, TensorEntry& entry);
  void reducescatter(const Response& response, TensorEntry& entry);

  // Applies what follows a Sum-based reduction (Average, postscale) to `count` elements.
  void finish_reduction(const Response& response, void* data, std::size_t count);
  // Device memory of the engine's own, valid for work queued on its stream from now on.
  void* scratch(std::size_t bytes);

  // Follows a NCCL call to completion (the communicator is non-blocking); throws on failure.
  void nccl(ncclResult_t result, const char* call);
  void cuda(cudaError_t result, const char* call);
  [[noreturn]] void fail(const std::string& what);
  std::string where() const;  // "rank 1 (cuda:0)"

  int rank_;
  int size_;
  int device_;
  std::chrono::milliseconds timeout_;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  ncclComm_t comm_ = nullptr;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  std::string broken_;  // set once an error was seen: every later operation fails with it
};

}  // namespace dtrain::runtime
