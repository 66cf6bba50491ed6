#pragma once

// Data-parallel Mask R-CNN training (dtrain-maskrcnn train): every rank of a
// `dtrain run` job loads its shard of the COCO training set, computes the
// losses of its part of the global batch, and DistributedOptimizer averages
// the gradients before each SGD step; rank 0 logs and writes checkpoints.
#include <string>

#include "vision/config/config.h"

namespace dtrain::maskrcnn {

struct TrainerSettings {
  int threads = 0;  // 0: the host's cores shared among its ranks
};

// Trains as the config says (MODEL.*, INPUT.*, DATASETS.TRAIN_*, SOLVER.*,
// DATALOADER.*, OUTPUT_DIR, SEED). Throws std::exception with one line on
// bad settings or data; the launcher then ends the job naming the rank.
void train(const vision::config::Config& config, const TrainerSettings& settings);

}  // namespace dtrain::maskrcnn
