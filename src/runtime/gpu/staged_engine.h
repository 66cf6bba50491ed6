// Collectives on CUDA memory through host memory: each operation's inputs are copied to
// pinned host buffers, the host data path (shared memory, Gloo, MPI) runs on those copies,
// and the results are copied back. For layouts NCCL refuses (several ranks on one GPU) and
// builds or machines where NCCL cannot be used. The copies use a stream of the engine's own;
// the thread waits for them, so results are in place when execute() returns.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/gpu/device_engine.h"

namespace dtrain::runtime {

class StagedEngine final : public DeviceEngine {
 public:
  StagedEngine(int device, HostRunner host);
  ~StagedEngine() override;
  StagedEngine(const StagedEngine&) = delete;
  StagedEngine& operator=(const StagedEngine&) = delete;

  const char* name() const override { return "staged"; }
  int device() const override { return device_; }
  void execute(const Response& response, std::vector<TensorEntry*>& tensors) override;

 private:
  // Pinned host memory of at least `bytes`, reused from one operation to the next.
  std::byte* staging(std::size_t bytes);

  int device_;
  HostRunner host_;
  cudaStream_t stream_ = nullptr;
  std::byte* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
};

}  // namespace dtrain::runtime
