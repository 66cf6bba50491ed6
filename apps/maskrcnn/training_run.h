#pragma once

// What one world of a Mask R-CNN training run holds: the config resolved for it (TrainingRun)
// and the model with its optimizer (TrainableModel), for trainer.cc, which builds them, and
// the hooks (training_hooks.h), which act on them.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "apps/maskrcnn/sharded_evaluation.h"
#include "apps/maskrcnn/trainer.h"
#include "apps/maskrcnn/training_distribution.h"
#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "training/training_log.h"
#include "vision/config/config.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/solver/loss_scaler.h"
#include "vision/solver/lr_schedule.h"
#include "vision/solver/multi_tensor_sgd.h"

namespace dtrain::maskrcnn {

namespace fs = std::filesystem;
namespace modeling = vision::modeling;
using vision::config::Config;
using Scalars = std::vector<std::pair<std::string, double>>;  // named numbers for the log
using training::TrainingLog;

// SOLVER.IMS_PER_BATCH split over the ranks, and the loop's length and periods.
struct StepPlan {
  int64_t global_batch, per_rank, max_iter, log_period, checkpoint_period, eval_period;
};

// Applied to the averaged gradients, so every rank clips alike.
class GradientClipper {
 public:
  bool enabled() const { return enabled_; }
  explicit GradientClipper(const Config& config)
      : enabled_(config.get<bool>("SOLVER.CLIP_GRADIENTS.ENABLED")),
        by_norm_(config.get<std::string>("SOLVER.CLIP_GRADIENTS.CLIP_TYPE") == "norm"),
        value_(config.get<double>("SOLVER.CLIP_GRADIENTS.CLIP_VALUE")),
        norm_type_(config.get<double>("SOLVER.CLIP_GRADIENTS.NORM_TYPE")) {
    const std::string type = config.get<std::string>("SOLVER.CLIP_GRADIENTS.CLIP_TYPE");
    if (type != "value" && type != "norm") {
      throw std::invalid_argument("SOLVER.CLIP_GRADIENTS.CLIP_TYPE: \"" + type + "\", expected \"value\" or \"norm\"");
    }
    if (enabled_ && !(value_ > 0)) throw std::invalid_argument("SOLVER.CLIP_GRADIENTS.CLIP_VALUE must be positive");
  }
  void clip(const std::vector<at::Tensor>& parameters) const {
    if (!enabled_) return;
    if (by_norm_) {
      torch::nn::utils::clip_grad_norm_(parameters, value_, norm_type_);
    } else {
      torch::nn::utils::clip_grad_value_(parameters, value_);
    }
  }

 private:
  bool enabled_, by_norm_;
  double value_, norm_type_;
};

// The config resolved once for this world and job (in this order: the seed is a collective
// under allreduce), and rank 0's log.
struct TrainingRun {
  TrainingRun(const Config& config, const TrainerSettings& settings, const dtrain::Placement& where,
              TrainingDistribution& distribution);

  dtrain::Placement placement;
  modeling::MaskRcnnOptions options;
  StepPlan steps;
  uint64_t seed;
  vision::solver::WarmupLrSchedule schedule;
  GradientClipper clipper;
  ExchangeOptions exchange;  // what the gradient exchange is asked for (clipping, compression)
  fs::path output_dir;
  EvaluationData test_data;
  TrainingLog log;
  bool elastic;  // SOLVER.ELASTIC.ENABLED: the world may change under the model
};

// The model, the SGD that steps its trainable parameters and float16's loss scaler.
struct TrainableModel {
  TrainableModel(const Config& config, const TrainingRun& run);

  at::Device device() const { return parameters.front().device(); }
  const vision::solver::LossScaler* loss_scale() const { return scaler ? &*scaler : nullptr; }

  modeling::MaskRcnn model;
  libtorch::NamedTensors trainable;    // by name, for the optimizers and checkpoints
  std::vector<at::Tensor> parameters;  // the same tensors, for SGD and clipping
  vision::solver::MultiTensorSgd sgd;  // torch::optim::SGD's rule in a few kernel launches per step
  std::optional<vision::solver::LossScaler> scaler;
};

// Whether both paths of an evaluation set are given.
bool has_data(const EvaluationData& data);

// The BatchNorm running statistics averaged over the ranks, before the model is evaluated or saved.
void average_batch_norm_statistics(modeling::MaskRcnnImpl& model);

// Every rank evaluates its shard; rank 0 logs the AP.
void evaluate(modeling::MaskRcnnImpl& model, const EvaluationData& data, const fs::path& output_dir, int64_t iteration,
              TrainingLog& log);

}  // namespace dtrain::maskrcnn
