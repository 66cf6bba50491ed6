#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace dtrain::vision {

// Which items rank `rank` of `world_size` reads in `epoch`, as PyTorch's
// DistributedSampler: every rank shuffles the same list with the shared seed
// and epoch, the list is padded by repeating its start up to a multiple of
// the world size (or, with drop_tail, cut down to one), and rank r takes
// positions r, r + world_size, ... So shards are disjoint (apart from the
// at most world_size - 1 padded repeats), together cover every item, and
// have equal lengths, which keeps the ranks' step counts in lockstep.
std::vector<uint32_t> shard_for_epoch(std::span<const uint32_t> items, uint64_t seed, uint64_t epoch, int rank,
                                      int world_size, bool shuffle, bool drop_tail = false);

struct BatchPlanOptions {
  size_t batch_size = 2;
  bool drop_last = false;
  // Detectron2's AspectRatioGroupedDataset: an item goes to bucket 0 when
  // its image is wider than tall, else bucket 1, and a batch is emitted when
  // a bucket fills, so every batch holds one orientation only.
  bool group_by_aspect_ratio = false;
};

// Cuts a shard into batches in order. With grouping, the buckets left
// partly filled at the end become short batches (unless drop_last).
// `is_portrait(item)` gives an item's bucket.
std::vector<std::vector<uint32_t>> plan_batches(std::span<const uint32_t> shard, const BatchPlanOptions& options,
                                                const std::function<bool(uint32_t)>& is_portrait);

// The batches of `rank` for an epoch. Without grouping every rank has the
// same number of batches already; with grouping the counts can differ by a
// batch or two, so every rank plans every rank's shard and keeps only as
// many batches as the rank with the fewest (the same few samples go unused
// this epoch on every rank; the next epoch reshuffles).
std::vector<std::vector<uint32_t>> plan_epoch(std::span<const uint32_t> items, uint64_t seed, uint64_t epoch, int rank,
                                              int world_size, bool shuffle, const BatchPlanOptions& options,
                                              const std::function<bool(uint32_t)>& is_portrait);

}  // namespace dtrain::vision
