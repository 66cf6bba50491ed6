#pragma once

// One image through a built model, copied out into plain values. Shared by
// `predict` (Predictor) and the evaluation inside `train`/`eval`.
#include <stdexcept>

#include "vision/inference/image_detections.h"
#include "vision/data/image.h"
#include "vision/modeling/mask_rcnn.h"

namespace dtrain::vision::inference {

// LibTorch's errors carry a C++ backtrace and sometimes several lines; a
// command line wants the first line of the message only.
std::runtime_error one_line_error(const c10::Error& error);

// Runs `image` (8-bit RGB) through `model`, which must be in eval() mode.
// Labels are the model's class indices. Throws std::runtime_error with the
// first line of LibTorch's message.
ImageDetections detect_image(vision::modeling::MaskRcnnImpl& model, const vision::RgbImage& image);

}  // namespace dtrain::vision::inference
