#include <cuda_runtime_api.h>

#include <array>
#include <cstring>

#include "runtime/gpu/cuda_check.h"
#include "runtime/gpu/device_engine.h"
#include "runtime/gpu/engine_choice.h"
#include "runtime/gpu/nccl_engine.h"
#include "runtime/gpu/staged_engine.h"
#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

// "host/0000:3b:00.0": equal for two ranks exactly when they use the same GPU.
std::string gpu_identity(const RuntimeConfig& config, int device) {
  char bus_id[32] = {};
  gpu::cuda_check(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), device), "cudaDeviceGetPCIBusId");
  return config.hostname + "/" + bus_id;
}

std::vector<std::string> gather_identities(Transport& transport, const std::string& mine) {
  constexpr std::size_t kWidth = 256;
  std::array<char, kWidth> padded{};
  std::memcpy(padded.data(), mine.data(), std::min(mine.size(), kWidth - 1));
  std::vector<char> all(kWidth * static_cast<std::size_t>(transport.size()));
  transport.allgatherv(padded.data(), all.data(), std::vector<std::size_t>(transport.size(), kWidth));
  std::vector<std::string> identities;
  for (int r = 0; r < transport.size(); ++r) identities.emplace_back(all.data() + r * kWidth);
  return identities;
}

}  // namespace

std::unique_ptr<DeviceEngine> make_device_engine(Transport& transport, const RuntimeConfig& config, int device,
                                                 HostRunner host) {
  int count = 0;
  if (const cudaError_t result = cudaGetDeviceCount(&count); result != cudaSuccess || count == 0) {
    throw Error("dtrain: rank " + std::to_string(transport.rank()) +
                " has a collective on CUDA tensors, but no CUDA device can be used (" +
                (result == cudaSuccess ? std::string("none found") : std::string(cudaGetErrorString(result))) + ")");
  }
  if (device < 0) device = config.local_rank % count;
  const GpuEngineChoice choice =
      choose_gpu_engine(config.gpu_engine, true, gather_identities(transport, gpu_identity(config, device)));
  if (transport.rank() == 0) {
    log().info("collectives on CUDA tensors go through {}: {}",
               choice.kind == GpuEngineKind::kNccl ? "NCCL" : "host memory (staged)", choice.reason);
  }
  if (choice.kind == GpuEngineKind::kNccl) return std::make_unique<NcclEngine>(transport, device, config.timeout);
  return std::make_unique<StagedEngine>(device, std::move(host));
}

}  // namespace dtrain::runtime
