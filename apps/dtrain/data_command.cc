#include "apps/dtrain/data_command.h"

#include <cstdio>
#include <exception>

#include "vision/data/synthetic_mnist.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/coco/coco_error.h"

namespace dtrain::cli {
namespace {

void add_spec_options(CLI::App* app, vision::SyntheticSpec& spec) {
  app->add_option("--out", spec.out_dir, "Output directory (created if missing)")->required()->type_name("DIR");
  app->add_option("--train", spec.train, "Number of training images")
      ->required()
      ->check(CLI::NonNegativeNumber)
      ->type_name("N");
  app->add_option("--val", spec.val, "Number of validation images")
      ->required()
      ->check(CLI::NonNegativeNumber)
      ->type_name("M");
  app->add_option("--size", spec.size, "Longest image side in pixels")
      ->default_val(128)
      ->check(CLI::Range(16u, 8192u))
      ->type_name("S");
  app->add_option("--min-size", spec.min_size,
                  "Shortest image side: each image's height and width are drawn in "
                  "[min-size, size] (default: all images size x size)")
      ->check(CLI::Range(0u, 8192u))
      ->type_name("S0");
  app->add_option("--seed", spec.seed, "Random seed; the same seed gives byte-identical files")
      ->default_val(0)
      ->type_name("K");
  app->add_option("--threads", spec.threads, "Generator threads (0: one per core)")
      ->default_val(0)
      ->check(CLI::NonNegativeNumber)
      ->type_name("T");
}

}  // namespace

DataCommand::DataCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("data", "Synthetic COCO-format instance-segmentation datasets");
  app_->require_subcommand(1);
  shapes_ = app_->add_subcommand("make-shapes",
                                 "Squares, circles and triangles on random backgrounds; polygon masks with occlusion");
  add_spec_options(shapes_, shapes_spec_);
  mnist_ = app_->add_subcommand("make-mnist-instances",
                                "MNIST digits scattered on a canvas; stroke masks as compressed RLE");
  add_spec_options(mnist_, mnist_spec_);
  mnist_->add_option("--mnist", mnist_dir_, "Directory with MNIST's idx files (scripts/setup)")
      ->default_val("data/mnist")
      ->type_name("DIR");
  app_->footer(
      "Writes DIR/{train,val}/<id>.png and DIR/annotations/instances_{train,val}.json.\n"
      "Exit status: 0 on success, 1 when the dataset cannot be made, 2 for usage errors.\n");
}

int DataCommand::execute() const {
  const bool shapes = shapes_->parsed();
  vision::SyntheticSpec spec = shapes ? shapes_spec_ : mnist_spec_;
  spec.progress = [](const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  try {
    if (shapes) {
      vision::make_shapes_dataset(spec);
    } else {
      vision::make_mnist_instances_dataset(spec, mnist_dir_);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain data: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace dtrain::cli
