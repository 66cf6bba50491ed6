#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::maskrcnn::testing {

// Builds the Mask R-CNN that `config_file` plus `overrides` describe,
// initialised randomly from `seed`, and saves its weights to `path` as
// training would. Kept out of the test proper so that only this file
// compiles against LibTorch.
void save_model_weights(const std::string& config_file, const std::vector<std::string>& overrides, uint64_t seed,
                        const std::string& path);

}  // namespace dtrain::maskrcnn::testing
