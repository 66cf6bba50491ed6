#include "dtrain/torch.h"
#include "torch/epoch_order.h"

namespace dtrain::libtorch {

DistributedSampler::DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       std::uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size),
      num_replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      drop_last_(drop_last) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas) {
    throw Error("dtrain::DistributedSampler: rank " + std::to_string(rank) + " is outside 0.." +
                std::to_string(num_replicas - 1));
  }
  const auto replicas = static_cast<std::size_t>(num_replicas);
  num_samples_ = drop_last ? dataset_size / replicas : (dataset_size + replicas - 1) / replicas;
}

std::vector<std::size_t> DistributedSampler::indices() const {
  std::vector<std::size_t> order = epoch_order(dataset_size_, shuffle_, seed_, epoch_);
  const std::size_t total = num_samples_ * static_cast<std::size_t>(num_replicas_);
  if (total > order.size() && !order.empty()) {
    // Pad by wrapping around so every rank takes the same number of steps.
    const std::size_t original = order.size();
    for (std::size_t i = 0; order.size() < total; ++i) order.push_back(order[i % original]);
  }
  order.resize(total);
  std::vector<std::size_t> mine;
  mine.reserve(num_samples_);
  for (std::size_t i = static_cast<std::size_t>(rank_); i < total; i += static_cast<std::size_t>(num_replicas_)) {
    mine.push_back(order[i]);
  }
  return mine;
}

}  // namespace dtrain::libtorch
