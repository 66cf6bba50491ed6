#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtrain::maskrcnn {

// `dtrain-maskrcnn predict --config-file C [--weights W] [KEY VALUE ...]
// --input IMAGE_OR_DIR --output OUT [--visualize] [--threads N]`: runs
// Mask R-CNN (on MODEL.DEVICE: cpu, or cuda for the first GPU) on JPEG/PNG
// images and writes OUT/<stem>.json (COCO results)
// and, with --visualize, OUT/<stem>.png; one summary line per image on
// stdout. docs/maskrcnn.md is the user's page.
class PredictCommand {
 public:
  explicit PredictCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }

  // Runs after parsing. Returns 0; 2 with a one-line message on stderr when
  // the command is wrong (config keys and values, --input, --output); 1 when
  // the work fails (an image that does not decode, weights that do not fit,
  // an output that cannot be written).
  int execute() const;

 private:
  CLI::App* app_;
  std::string config_file_, weights_, input_, output_;
  bool visualize_ = false;
  int threads_ = 0;
};

}  // namespace dtrain::maskrcnn
