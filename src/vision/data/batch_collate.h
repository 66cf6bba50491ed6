#pragma once

// Turns loaded samples into LibTorch tensors. This is the one part of the
// data pipeline that needs LibTorch (library dtrain_vision_batching); it
// includes only ATen, whose headers compile far faster than torch/torch.h.
#include <array>
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "vision/data/data_loader.h"

namespace dtrain::vision {

// One image's targets: boxes [K, 4] float32 (x1, y1, x2, y2), labels [K]
// int64 (1..K classes), masks [K, H, W] uint8 at the image's own (unpadded)
// size, as torchvision's detection models take them.
struct TensorTargets {
  at::Tensor boxes;
  at::Tensor labels;
  at::Tensor masks;
  int64_t image_id = 0;
};

struct TensorBatch {
  // [N, 3, H, W] float32, every image at the top left, zero padding on the
  // right and bottom; H and W are the largest height and width of the batch
  // rounded up to a multiple of size_divisible (GeneralizedRCNNTransform's
  // batch_images).
  at::Tensor images;
  std::vector<std::array<int64_t, 2>> image_sizes;  // {height, width} before padding
  std::vector<TensorTargets> targets;
};

// pinned: in page-locked memory (a LibTorch with CUDA only), from which copies to a GPU run
// asynchronously.
TensorBatch collate_batch(const std::vector<TrainingSample>& samples, int64_t size_divisible = 32, bool pinned = false);

}  // namespace dtrain::vision
