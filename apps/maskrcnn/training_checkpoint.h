#pragma once

// What `train --resume` continues from. A checkpoint at iteration N is two
// files in OUTPUT_DIR plus a pointer:
//   model_000N.pth         the model's state dict (torch.load-able; also what
//                          MODEL.WEIGHTS and `predict --weights` take)
//   model_000N.solver.pth  iteration, SGD momentum buffers by parameter name, and
//                          float16 training's loss scale
//   last_checkpoint        the name of the newest model file (Detectron2's)
// Each file is written to a temporary name and renamed, the pointer last, so
// a process killed at any moment leaves last_checkpoint naming a whole pair.
// The learning-rate schedule is a function of the iteration and the data
// order one of the iteration and seed, so nothing else needs saving.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "dtrain/torch.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/solver/loss_scaler.h"

namespace dtrain::maskrcnn {

// "model_0000300.pth"
std::string checkpoint_name(int64_t iteration);

// Rank 0 only. `trainable` names the parameters `sgd` updates; `scaler` is float16 training's.
void save_training_checkpoint(const std::filesystem::path& output_dir, const std::string& model_file,
                              const vision::modeling::MaskRcnnImpl& model, torch::optim::SGD& sgd,
                              const libtorch::NamedTensors& trainable, int64_t iteration,
                              const vision::solver::LossScaler* scaler);

// The model file last_checkpoint names, or nullopt when there is none.
std::optional<std::filesystem::path> last_checkpoint(const std::filesystem::path& output_dir);

// Loads the pair `model_file` belongs to into model and sgd and returns its
// iteration. Throws std::runtime_error naming the file when the solver file
// is missing or does not match the model's parameters.
int64_t load_training_checkpoint(const std::filesystem::path& model_file, vision::modeling::MaskRcnnImpl& model,
                                 torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable,
                                 vision::solver::LossScaler* scaler);

}  // namespace dtrain::maskrcnn
