#include "vision/data/sample_plan.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "vision/data/transforms.h"
#include "vision/coco/coco_error.h"

namespace dtrain::vision {

std::vector<uint32_t> shard_for_epoch(std::span<const uint32_t> items, uint64_t seed, uint64_t epoch, int rank,
                                      int world_size, bool shuffle, bool drop_tail) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw CocoError("sampler: rank " + std::to_string(rank) + " is not in a world of " + std::to_string(world_size));
  }
  std::vector<uint32_t> order(items.begin(), items.end());
  if (shuffle) {
    SampleRng rng(mix_seed(seed, epoch, 0x5348554646ull));
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
  const size_t world = static_cast<size_t>(world_size);
  if (drop_tail) {
    order.resize(order.size() / world * world);
  } else if (!order.empty() && order.size() % world != 0) {
    const size_t padded = (order.size() + world - 1) / world * world;
    for (size_t i = 0; order.size() < padded; ++i) order.push_back(order[i]);
  }
  std::vector<uint32_t> shard;
  shard.reserve(order.size() / world);
  for (size_t i = static_cast<size_t>(rank); i < order.size(); i += world) shard.push_back(order[i]);
  return shard;
}

std::vector<std::vector<uint32_t>> plan_batches(std::span<const uint32_t> shard, const BatchPlanOptions& options,
                                                const std::function<bool(uint32_t)>& is_portrait) {
  if (options.batch_size == 0) throw CocoError("sampler: batch size must be at least 1");
  std::vector<std::vector<uint32_t>> batches;
  if (!options.group_by_aspect_ratio) {
    for (size_t i = 0; i < shard.size(); i += options.batch_size) {
      const size_t end = std::min(shard.size(), i + options.batch_size);
      if (end - i < options.batch_size && options.drop_last) break;
      batches.emplace_back(shard.begin() + static_cast<long>(i), shard.begin() + static_cast<long>(end));
    }
    return batches;
  }
  std::vector<uint32_t> buckets[2];
  for (uint32_t item : shard) {
    auto& bucket = buckets[is_portrait(item) ? 1 : 0];
    bucket.push_back(item);
    if (bucket.size() == options.batch_size) {
      batches.push_back(std::move(bucket));
      bucket.clear();
    }
  }
  if (!options.drop_last) {
    for (auto& bucket : buckets) {
      if (!bucket.empty()) batches.push_back(std::move(bucket));
    }
  }
  return batches;
}

std::vector<std::vector<uint32_t>> plan_epoch(std::span<const uint32_t> items, uint64_t seed, uint64_t epoch, int rank,
                                              int world_size, bool shuffle, const BatchPlanOptions& options,
                                              const std::function<bool(uint32_t)>& is_portrait) {
  auto mine = plan_batches(shard_for_epoch(items, seed, epoch, rank, world_size, shuffle), options, is_portrait);
  if (!options.group_by_aspect_ratio || world_size == 1) return mine;
  size_t fewest = std::numeric_limits<size_t>::max();
  for (int r = 0; r < world_size; ++r) {
    const size_t n =
        r == rank
            ? mine.size()
            : plan_batches(shard_for_epoch(items, seed, epoch, r, world_size, shuffle), options, is_portrait).size();
    fewest = std::min(fewest, n);
  }
  mine.resize(fewest);
  return mine;
}

}  // namespace dtrain::vision
