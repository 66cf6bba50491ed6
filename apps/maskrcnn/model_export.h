#pragma once

// What `dtrain serve` needs next to the weights in the job's model directory
// (SM_MODEL_DIR, packed into model.tar.gz): config.yaml, the config as the
// run resolved it (every key, so that serving does not depend on the files
// and overrides the job started from), and model.json naming the kind, the
// files and the categories in label order (label l is categories[l - 1]).
#include <filesystem>
#include <string>
#include <vector>

#include "vision/config/config.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::maskrcnn {

// Writes model_dir/config.yaml and model_dir/model.json (weights_file is the
// weights' name inside model_dir). Throws std::runtime_error naming the file.
void write_model_metadata(const std::filesystem::path& model_dir, const std::string& weights_file,
                          const vision::config::Config& config, const std::vector<vision::CocoCategory>& categories);

}  // namespace dtrain::maskrcnn
