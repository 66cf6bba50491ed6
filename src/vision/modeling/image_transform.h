#pragma once

// What happens to images between the user and the network, as torchvision's
// GeneralizedRCNNTransform does it: normalise each image with the pixel mean
// and std, resize it so its short side is min_size unless that makes the
// long side exceed max_size (bilinear; targets' boxes and masks follow),
// and pad the batch to a common size divisible by 32. After inference,
// detections are mapped back to each image's own size.
#include <ATen/ATen.h>

#include <optional>
#include <vector>

#include "vision/modeling/mask_rcnn_options.h"
#include "vision/structures/instances.h"

namespace dtrain::vision::modeling {

struct ImageBatch {
  at::Tensor tensors;                  // [N, 3, H, W], zero padded bottom and right
  std::vector<ImageSize> image_sizes;  // each image's size after resizing, before padding
};

class ImageTransform {
 public:
  explicit ImageTransform(TransformOptions options);

  // images: [3, H, W] floating point in 0..1. In training, targets (one per
  // image) are resized along and the short side is drawn per image from
  // min_size_train with generator (one uniform draw each, as torchvision's
  // torch_choice, so a shared seed reproduces torchvision's choice).
  ImageBatch forward(const std::vector<at::Tensor>& images, std::vector<DetectionTargets>* targets, bool training,
                     at::Generator generator) const;

  // Maps detections from resized to original image sizes: boxes scaled,
  // masks [N, 1, 28, 28] pasted into [N, 1, H, W] images.
  void postprocess(std::vector<Detections>& detections, const std::vector<ImageSize>& resized_sizes,
                   const std::vector<ImageSize>& original_sizes) const;

  const TransformOptions& options() const { return options_; }

  // The size an image of size `size` is resized to for short side
  // min_size and cap max_size (the scale computed in float32, the size
  // floored, as torchvision's interpolate with recompute_scale_factor).
  static ImageSize resized_size(ImageSize size, double min_size, double max_size);

 private:
  TransformOptions options_;
};

// boxes [K, 4] scaled from image size `from` to `to` (ratios in float32).
at::Tensor resize_boxes(const at::Tensor& boxes, ImageSize from, ImageSize to);

}  // namespace dtrain::vision::modeling
