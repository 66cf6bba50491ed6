#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "vision/data/synthetic_coco_writer.h"

namespace dtrain::cli {

// `dtrain data make-shapes|make-mnist-instances --out DIR --train N --val M
// --size S [--min-size S0] --seed K [--threads T]` (make-mnist-instances also
// takes --mnist DIR): writes a COCO-format instance-segmentation dataset,
// DIR/{train,val}/*.png and DIR/annotations/instances_{train,val}.json,
// byte-identical for a seed. Progress goes to stdout; a failure is one line
// "dtrain data: ..." on stderr and exit 1.
class DataCommand {
 public:
  explicit DataCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }
  int execute() const;

 private:
  CLI::App* app_;
  CLI::App* shapes_;
  CLI::App* mnist_;
  vision::SyntheticSpec shapes_spec_;
  vision::SyntheticSpec mnist_spec_;
  std::string mnist_dir_ = "data/mnist";
};

}  // namespace dtrain::cli
