#include "train_command.h"

#include <cstdio>

#include "trainer.h"
#include "vision/config/config_error.h"
#include "vision/config/maskrcnn_defaults.h"

namespace dtrain::maskrcnn {

TrainCommand::TrainCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("train", "Train Mask R-CNN, data-parallel under `dtrain run`");
  app_->add_option("--config-file", config_file_, "Config (YAML, e.g. configs/mask_rcnn_R_18_FPN_cpu_shapes.yaml)")
      ->required()
      ->type_name("C");
  app_->add_option("--threads", threads_, "LibTorch threads per rank (0: the host's cores shared among its ranks)")
      ->check(CLI::Range(0, 4096))
      ->default_val(0)
      ->type_name("N");
  // Trailing KEY VALUE overrides (SOLVER.MAX_ITER 300 ...) are taken as
  // extras, verbatim: a positional vector would let CLI11 split "[450, 550]".
  app_->allow_extras();
}

int TrainCommand::execute() const {
  vision::config::Config config = vision::config::maskrcnn_defaults();
  try {
    config.merge_from_file(config_file_);
    config.merge_from_list(app_->remaining());
  } catch (const vision::config::ConfigError& e) {
    std::fprintf(stderr, "dtrain-maskrcnn train: %s\n", e.what());
    return 2;
  }
  try {
    train(config, TrainerSettings{threads_});
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-maskrcnn train: %s\n", e.what());
    return 1;
  }
}

}  // namespace dtrain::maskrcnn
