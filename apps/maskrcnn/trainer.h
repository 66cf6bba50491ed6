#pragma once

// Data-parallel Mask R-CNN training (dtrain-maskrcnn train / eval): every
// rank of a `dtrain run` job loads its shard of the COCO training set,
// computes the losses of its part of the global batch, and
// DistributedOptimizer averages the gradients before each SGD step; rank 0
// logs, writes checkpoints and metrics; evaluation is sharded over the ranks.
// With distribution "ps" the workers train through parameter servers
// (PSOptimizer) instead and rank 0, the chief, evaluates alone.
#include <string>

#include "vision/config/config.h"

namespace dtrain::maskrcnn {

struct TrainerSettings {
  int threads = 0;                // 0: the host's cores shared among its ranks
  bool resume = false;            // continue from OUTPUT_DIR/last_checkpoint when there is one
  bool eval_only = false;         // evaluate MODEL.WEIGHTS (or, with resume, the last checkpoint)
  bool output_dir_given = false;  // OUTPUT_DIR came from the command line, not a file
  // "ps": train through parameter servers (under `dtrain run --ps`) instead of allreduce.
  std::string distribution = "allreduce";
};

// Trains as the config says (MODEL.*, INPUT.*, DATASETS.*, SOLVER.*,
// DATALOADER.*, TEST.EVAL_PERIOD, OUTPUT_DIR, SEED). Throws std::exception
// with one line on bad settings or data; the launcher then ends the job
// naming the rank.
void train(vision::config::Config config, const TrainerSettings& settings);

}  // namespace dtrain::maskrcnn
