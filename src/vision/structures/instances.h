#pragma once

// The per-image instance sets a detector consumes and produces, as tensors in
// torchvision's detection layout, so that data loaders, the model, the
// evaluator and the command line agree on one shape for each.
#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dtrain::vision {

// Ground truth of one image for training (as tensors; the data pipeline's
// vision::InstanceTargets holds the same as plain vectors before batching): boxes [K, 4] float (x1, y1, x2, y2
// in pixels of the image as given), labels [K] int64 in 1..num_classes-1,
// masks [K, H, W] uint8 (0/1) at the image's size. K may be 0: the image
// then trains the background only.
struct DetectionTargets {
  at::Tensor boxes;
  at::Tensor labels;
  at::Tensor masks;
};

// Detections in one image: boxes [N, 4] float in the image's own pixels,
// labels [N] int64, scores [N] float (descending), masks [N, 1, H, W] float
// probabilities at the image's size (threshold at 0.5 for a binary mask);
// masks stays undefined when the model has no mask head.
struct Detections {
  at::Tensor boxes;
  at::Tensor labels;
  at::Tensor scores;
  at::Tensor masks;
};

using ImageSize = std::array<int64_t, 2>;  // {height, width}

}  // namespace dtrain::vision
