#include "runtime/gpu/engine_choice.h"

#include <map>

#include "dtrain/error.h"

namespace dtrain::runtime {
namespace {

// "ranks 0,1 share GPU X" for the first GPU used by more than one rank, else empty.
std::string shared_gpu(const std::vector<std::string>& gpu_of_rank) {
  std::map<std::string, std::vector<int>> ranks_of_gpu;
  for (std::size_t r = 0; r < gpu_of_rank.size(); ++r) ranks_of_gpu[gpu_of_rank[r]].push_back(static_cast<int>(r));
  for (const auto& [gpu, ranks] : ranks_of_gpu) {
    if (ranks.size() < 2) continue;
    std::string list;
    for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
    return "ranks " + list + " share GPU " + gpu;
  }
  return {};
}

}  // namespace

GpuEngineChoice choose_gpu_engine(const std::string& requested, bool nccl_built,
                                  const std::vector<std::string>& gpu_of_rank) {
  if (requested == "staged") return {GpuEngineKind::kStaged, "DTRAIN_GPU_ENGINE=staged"};
  if (requested == "nccl") {
    if (!nccl_built)
      throw Error(
          "dtrain: DTRAIN_GPU_ENGINE=nccl, but this build has no NCCL (configure with DTRAIN_CUDA=ON and NCCL "
          "installed)");
    return {GpuEngineKind::kNccl, "DTRAIN_GPU_ENGINE=nccl"};
  }
  if (requested != "auto" && !requested.empty()) {
    throw Error("dtrain: DTRAIN_GPU_ENGINE must be auto, nccl or staged (got '" + requested + "')");
  }
  if (!nccl_built) return {GpuEngineKind::kStaged, "this build has no NCCL"};
  if (std::string shared = shared_gpu(gpu_of_rank); !shared.empty()) {
    return {GpuEngineKind::kStaged, shared + ", which NCCL does not allow"};
  }
  return {GpuEngineKind::kNccl, "every rank has a GPU of its own"};
}

}  // namespace dtrain::runtime
