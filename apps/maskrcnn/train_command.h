#pragma once

// `dtrain-maskrcnn train` and `dtrain-maskrcnn eval`: Detectron2's command
// line (--config-file, --resume, --eval-only, then KEY VALUE overrides) for
// data-parallel training and evaluation under `dtrain run`. `eval` is
// `train --eval-only`.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace dtrain::maskrcnn {

class TrainCommand {
 public:
  enum class Mode { kTrain, kEval };
  TrainCommand(CLI::App& parent, Mode mode);
  CLI::App* subcommand() const { return app_; }
  // 0 when training (evaluation) finished; 2 with one line on stderr for a
  // wrong command or config; 1 when it fails (data, weights, a peer rank).
  int execute() const;

 private:
  CLI::App* app_;
  Mode mode_;
  std::string config_file_;
  int threads_ = 0;
  bool resume_ = false;
  bool eval_only_ = false;
  std::string distribution_ = "allreduce";
};

// The trailing overrides as KEY VALUE pairs. A job runner passes
// hyperparameters as `--KEY value` (SageMaker's toolkit style), so a leading
// "--" before a key is dropped.
std::vector<std::string> override_pairs(const std::vector<std::string>& extras);

}  // namespace dtrain::maskrcnn
