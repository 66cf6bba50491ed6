#pragma once

// The two ways dtrain-maskrcnn's workers train together (TrainerSettings::distribution),
// chosen once so that the trainer's loop reads the same for both:
//
// - "allreduce": the ranks meet through the runtime (dtrain::init()); DistributedOptimizer
//   averages the gradients and every rank steps its own SGD.
// - "ps" (under `dtrain run --ps`): the workers do not meet. Each runs the model's own
//   collectives (loss normalisation, SyncBN, evaluation) on a one-process runtime
//   (dtrain::init_alone()), and PSOptimizer pushes its gradients to the parameter servers,
//   which apply SGD and send the fresh weights back. Rank 0, the chief, writes the
//   checkpoints and evaluates alone.
#include <torch/optim/sgd.h>

#include <cstdint>
#include <memory>

#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "apps/maskrcnn/trainer.h"
#include "training/gradient_step.h"
#include "vision/config/config.h"

namespace dtrain::maskrcnn {

// How a step's gradients become new weights (training::GradientPath: zero_grad(),
// wait_for_gradients(), apply(), which the engine's steps call), and what else the
// distribution decides.
class GradientExchange : public training::GradientPath {
 public:
  // The iteration training starts at: the restored one, or the chief's (parameter servers).
  virtual int64_t start_iteration() const = 0;
  // Before rank 0 writes a checkpoint: the parameters brought up to date.
  virtual void before_checkpoint() {}
  // Whether this rank takes part in the evaluations during training.
  virtual bool evaluates_during_training() const = 0;
  // After the last step; whether this rank goes on to the final model and evaluation.
  virtual bool finish() = 0;
};

// What the trainer asks of a GradientExchange.
struct ExchangeOptions {
  // The caller changes the gradients between wait_for_gradients() and apply().
  bool clipping = false;
  // SOLVER.GRADIENT_COMPRESSION: the dtype float32 gradients travel in, and the size below
  // which they travel as they are.
  libtorch::Compression compression = libtorch::Compression::kNone;
  int64_t compression_min_bytes = 0;
  // SOLVER.POWER_SGD.
  libtorch::PowerSgdOptions power_sgd;
};

// SOLVER.GRADIENT_COMPRESSION.{ENABLED, DTYPE, MIN_BYTES} and SOLVER.POWER_SGD.{RANK, START_STEP}
// read and checked (std::invalid_argument naming the key and the value).
ExchangeOptions exchange_options(const vision::config::Config& config, bool clipping);

class TrainingDistribution {
 public:
  virtual ~TrainingDistribution() = default;

  // Starts this process's runtime; where the process sits in the job.
  virtual dtrain::Placement start() = 0;
  // The job's seed when SEED is negative: the same on every rank.
  virtual uint64_t draw_seed() = 0;
  // Takes over `sgd`'s updates of `trainable` from `start_iter` (rank 0's, already broadcast).
  // Throws std::invalid_argument for options the distribution does not support.
  virtual std::unique_ptr<GradientExchange> attach(torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable,
                                                   int64_t start_iter, const ExchangeOptions& options) = 0;
};

// Throws std::invalid_argument for settings the distribution does not support.
std::unique_ptr<TrainingDistribution> choose_distribution(const TrainerSettings& settings);

}  // namespace dtrain::maskrcnn
