// The order of a dataset's samples in one epoch, shared by DistributedSampler and
// ElasticSampler so both shuffle alike: every rank computes the same order from the seed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtrain::libtorch {

// 0..size-1, shuffled (when `shuffle`) by a Fisher-Yates written out over a fixed generator
// seeded with seed + epoch, so every build and standard library shuffles the same.
std::vector<std::size_t> epoch_order(std::size_t size, bool shuffle, std::uint64_t seed, std::int64_t epoch);

}  // namespace dtrain::libtorch
