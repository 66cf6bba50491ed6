#pragma once

#include "vision/config/config.h"

namespace dtrain::vision::config {

// Every key a Mask R-CNN training run reads, with torchvision's
// maskrcnn_resnet50_fpn defaults for the model and Detectron2's 1x COCO
// schedule for the solver. docs/config.md explains each key.
Config maskrcnn_defaults();

}  // namespace dtrain::vision::config
