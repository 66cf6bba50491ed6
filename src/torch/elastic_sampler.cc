// ElasticSampler (include/dtrain/torch.h): an epoch as a shared shuffled order and a consumed
// prefix. Rank r of s takes remaining[r], remaining[r + s], ...: after k steps of b samples on
// every rank, exactly the first k*b*s remaining samples were used, so the prefix grows by that.
#include <algorithm>

#include "dtrain/torch.h"
#include "torch/epoch_order.h"

namespace dtrain::libtorch {

ElasticSampler::ElasticSampler(std::size_t dataset_size, std::uint64_t seed, bool shuffle)
    : dataset_size_(dataset_size), seed_(seed), shuffle_(shuffle) {}

void ElasticSampler::set_epoch(std::int64_t epoch) { set_position(epoch, 0); }

void ElasticSampler::set_position(std::int64_t epoch, std::size_t consumed) {
  if (consumed > dataset_size_) {
    throw Error("dtrain::ElasticSampler: position " + std::to_string(consumed) + " is past the dataset's " +
                std::to_string(dataset_size_) + " samples");
  }
  epoch_ = epoch;
  consumed_ = consumed;
}

std::vector<std::size_t> ElasticSampler::indices(int rank, int size) const {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error("dtrain::ElasticSampler: rank " + std::to_string(rank) + " is outside 0.." + std::to_string(size - 1));
  }
  const std::vector<std::size_t> order = epoch_order(dataset_size_, shuffle_, seed_, epoch_);
  const std::size_t remaining = dataset_size_ - consumed_;
  if (remaining == 0) return {};
  const auto ranks = static_cast<std::size_t>(size);
  const std::size_t per_rank = (remaining + ranks - 1) / ranks;
  std::vector<std::size_t> mine;
  mine.reserve(per_rank);
  for (std::size_t j = 0; j < per_rank; ++j) {
    const std::size_t position = static_cast<std::size_t>(rank) + j * ranks;  // within the remaining samples
    mine.push_back(order[consumed_ + position % remaining]);
  }
  return mine;
}

void ElasticSampler::record_batch(std::size_t batch_size, int size) {
  consumed_ = std::min(dataset_size_, consumed_ + batch_size * static_cast<std::size_t>(size));
}

}  // namespace dtrain::libtorch
