#pragma once

// One image through a built model, copied out into plain values. Shared by
// `predict` and `serve` (Predictor) and the evaluation inside `train`/`eval`.
#include <stdexcept>

#include "vision/inference/image_detections.h"
#include "vision/data/image.h"
#include "vision/modeling/mask_rcnn.h"

namespace dtrain::vision::inference {

// LibTorch's errors carry a C++ backtrace and sometimes several lines; a
// command line wants the first line of the message only.
std::runtime_error one_line_error(const c10::Error& error);

// [3, H, W] float RGB in 0..1 on the CPU: the model's input for an 8-bit RGB image.
at::Tensor image_tensor(const vision::RgbImage& image);

// One image's detections (`height` x `width`, on any device) copied to the CPU as plain
// values; masks thresholded at 0.5.
ImageDetections plain_detections(const vision::Detections& found, uint32_t height, uint32_t width);

// Runs `image` (8-bit RGB) through `model`, which must be in eval() mode.
// Labels are the model's class indices. Throws std::runtime_error with the
// first line of LibTorch's message.
ImageDetections detect_image(vision::modeling::MaskRcnnImpl& model, const vision::RgbImage& image);

}  // namespace dtrain::vision::inference
