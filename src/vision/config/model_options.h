#pragma once

#include "vision/config/config.h"
#include "vision/modeling/mask_rcnn_options.h"

namespace dtrain::vision::config {

// The model's options from the MODEL.* and INPUT.* keys of a config made by
// maskrcnn_defaults() (and merged since). Checks every value the model
// would otherwise trip over later, and throws ConfigError naming the key:
// "MODEL.RESNETS.DEPTH must be one of 18, 34, 50, 101, got 152".
modeling::MaskRcnnOptions to_model_options(const Config& config);

}  // namespace dtrain::vision::config
