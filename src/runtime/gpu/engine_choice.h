// Which engine moves a job's CUDA tensors, decided from what the user asked for and where
// the ranks' GPUs are. Pure logic: the caller gathers every rank's GPU identity.
//
// - "nccl": NCCL, the GPUs talking directly (NVLink, PCIe, the network). It needs a GPU of
//   its own for each rank: NCCL refuses a communicator with two ranks on one GPU.
// - "staged": each rank copies to pinned host memory, the host engines (shared memory, Gloo,
//   MPI) reduce, and the result is copied back. Works with any layout, at host speed.
// - "auto" (default): NCCL when it is built and every rank has its own GPU, else staged.
#pragma once

#include <string>
#include <vector>

namespace dtrain::runtime {

enum class GpuEngineKind { kNccl, kStaged };

struct GpuEngineChoice {
  GpuEngineKind kind;
  std::string reason;  // one line for the log: why this engine
};

// `requested`: DTRAIN_GPU_ENGINE. `gpu_of_rank[r]`: rank r's GPU, any text that is equal for
// two ranks exactly when they use the same GPU (host and PCI bus id). Throws dtrain::Error
// when "nccl" is asked for but not built.
GpuEngineChoice choose_gpu_engine(const std::string& requested, bool nccl_built,
                                  const std::vector<std::string>& gpu_of_rank);

}  // namespace dtrain::runtime
