#pragma once

#include <string>

#include "vision/config/config.h"

namespace dtrain::vision::config {

// Applies the YAML file at `path` to `config`: first the file its top-level
// `_BASE_` names (relative to the file that names it, recursively, a cycle
// being an error), then the file's own keys. Keys nest as mappings
// (MODEL: {RPN: {NMS_THRESH: 0.6}}); a dotted name at any level also works.
// Leaves `config` partly changed when it throws: Config::merge_from_file
// merges into a copy.
void merge_yaml_file(Config& config, const std::string& path);

}  // namespace dtrain::vision::config
