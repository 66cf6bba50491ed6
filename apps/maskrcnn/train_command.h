#pragma once

// `dtrain-maskrcnn train`: Detectron2's command line (--config-file, then
// KEY VALUE overrides) for data-parallel training under `dtrain run`.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace dtrain::maskrcnn {

class TrainCommand {
 public:
  explicit TrainCommand(CLI::App& parent);
  CLI::App* subcommand() const { return app_; }
  // 0 when training finished; 2 with one line on stderr for a wrong command
  // or config; 1 when training fails (data, weights, a peer rank).
  int execute() const;

 private:
  CLI::App* app_;
  std::string config_file_;
  int threads_ = 0;
};

}  // namespace dtrain::maskrcnn
