#include "apps/maskrcnn/train_command.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "apps/maskrcnn/trainer.h"
#include "vision/config/config_error.h"
#include "vision/config/maskrcnn_defaults.h"

namespace dtrain::maskrcnn {

std::vector<std::string> override_pairs(const std::vector<std::string>& extras) {
  std::vector<std::string> pairs;
  for (size_t i = 0; i < extras.size(); ++i) {
    const std::string& item = extras[i];
    // Keys are in position 0, 2, 4, ...; only a key loses its dashes, so a
    // negative number or a "--" inside a value stays as it is.
    if (pairs.size() % 2 == 0 && item.starts_with("--") && item.size() > 2 &&
        std::isupper(static_cast<unsigned char>(item[2]))) {
      pairs.push_back(item.substr(2));
    } else {
      pairs.push_back(item);
    }
  }
  return pairs;
}

TrainCommand::TrainCommand(CLI::App& parent, Mode mode) : mode_(mode) {
  app_ = mode == Mode::kTrain
             ? parent.add_subcommand("train", "Train Mask R-CNN, data-parallel under `dtrain run`")
             : parent.add_subcommand("eval",
                                     "COCO bbox/segm AP of MODEL.WEIGHTS on DATASETS.TEST_*, sharded over the ranks");
  app_->add_option("--config-file", config_file_, "Config (YAML, e.g. configs/mask_rcnn_R_18_FPN_cpu_shapes.yaml)")
      ->required()
      ->type_name("C");
  app_->add_option("--threads", threads_, "LibTorch threads per rank (0: the host's cores shared among its ranks)")
      ->check(CLI::Range(0, 4096))
      ->default_val(0)
      ->type_name("N");
  app_->add_flag("--resume", resume_,
                 mode == Mode::kTrain
                     ? "Continue from OUTPUT_DIR/last_checkpoint (model, momentum, iteration) if there is one"
                     : "Evaluate OUTPUT_DIR/last_checkpoint instead of MODEL.WEIGHTS");
  if (mode == Mode::kTrain) {
    app_->add_flag("--eval-only", eval_only_, "Only evaluate (what `eval` does)");
    app_->add_option("--distribution", distribution_,
                     "allreduce (default) or ps: train through parameter servers (under `dtrain run --ps`)")
        ->check(CLI::IsMember({"allreduce", "ps"}));
  }
  // Trailing KEY VALUE overrides (SOLVER.MAX_ITER 300 ...) are taken as
  // extras, verbatim: a positional vector would let CLI11 split "[450, 550]".
  app_->allow_extras();
  app_->footer(
      "Overrides: trailing KEY VALUE pairs (or --KEY VALUE, as job hyperparameters arrive), e.g.\n"
      "  SOLVER.MAX_ITER 300 SOLVER.BASE_LR 0.02 OUTPUT_DIR out/run1\n"
      "Progress lines, metrics.json and TensorBoard files: see docs/maskrcnn.md.\n");
}

int TrainCommand::execute() const {
  const char* name = mode_ == Mode::kTrain ? "train" : "eval";
  vision::config::Config config = vision::config::maskrcnn_defaults();
  const std::vector<std::string> overrides = override_pairs(app_->remaining());
  try {
    config.merge_from_file(config_file_);
    config.merge_from_list(overrides);
  } catch (const vision::config::ConfigError& e) {
    std::fprintf(stderr, "dtrain-maskrcnn %s: %s\n", name, e.what());
    return 2;
  }
  TrainerSettings settings;
  settings.threads = threads_;
  settings.resume = resume_;
  settings.distribution = distribution_;
  settings.eval_only = eval_only_ || mode_ == Mode::kEval;
  for (size_t i = 0; i < overrides.size(); i += 2) settings.output_dir_given |= overrides[i] == "OUTPUT_DIR";
  try {
    train(config, settings);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-maskrcnn %s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace dtrain::maskrcnn
