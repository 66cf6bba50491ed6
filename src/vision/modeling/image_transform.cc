#include "vision/modeling/image_transform.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "vision/ops/paste_masks.h"

namespace dtrain::vision::modeling {

ImageTransform::ImageTransform(TransformOptions options) : options_(std::move(options)) {}

ImageSize ImageTransform::resized_size(ImageSize size, double min_size, double max_size) {
  const float short_side = static_cast<float>(std::min(size[0], size[1]));
  const float long_side = static_cast<float>(std::max(size[0], size[1]));
  // torchvision divides a Python float by a float32 tensor, which PyTorch
  // computes as reciprocal(tensor) * scalar in float32; doing the same keeps
  // the floored sizes identical.
  const float scale =
      std::min((1.0f / short_side) * static_cast<float>(min_size), (1.0f / long_side) * static_cast<float>(max_size));
  // At least one pixel: a 600x3 image would otherwise shrink to height 0,
  // which interpolation refuses (torchvision fails there; we detect nothing).
  return {
      std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(size[0]) * static_cast<double>(scale)))),
      std::max<int64_t>(1,
                        static_cast<int64_t>(std::floor(static_cast<double>(size[1]) * static_cast<double>(scale))))};
}

at::Tensor resize_boxes(const at::Tensor& boxes, ImageSize from, ImageSize to) {
  const at::Tensor ratio_h = at::scalar_tensor(static_cast<float>(to[0])) / static_cast<float>(from[0]);
  const at::Tensor ratio_w = at::scalar_tensor(static_cast<float>(to[1])) / static_cast<float>(from[1]);
  auto c = boxes.unbind(1);
  return at::stack({c[0] * ratio_w, c[1] * ratio_h, c[2] * ratio_w, c[3] * ratio_h}, 1);
}

ImageBatch ImageTransform::forward(const std::vector<at::Tensor>& images, std::vector<DetectionTargets>* targets,
                                   bool training, at::Generator generator) const {
  if (images.empty()) throw std::invalid_argument("image transform: no images given");
  if (targets && targets->size() != images.size()) {
    throw std::invalid_argument("image transform: " + std::to_string(images.size()) + " images but " +
                                std::to_string(targets->size()) + " targets");
  }
  const at::Tensor mean = at::tensor({options_.pixel_mean[0], options_.pixel_mean[1], options_.pixel_mean[2]});
  const at::Tensor std = at::tensor({options_.pixel_std[0], options_.pixel_std[1], options_.pixel_std[2]});
  std::vector<at::Tensor> resized;
  ImageBatch batch;
  for (size_t i = 0; i < images.size(); ++i) {
    const at::Tensor& image = images[i];
    if (image.dim() != 3 || image.size(0) != 3) {
      throw std::invalid_argument("image " + std::to_string(i) + ": expected a [3, H, W] tensor, got " +
                                  c10::str(image.sizes()));
    }
    if (!image.is_floating_point()) {
      throw std::invalid_argument("image " + std::to_string(i) + ": expected floating point pixels in 0..1, got " +
                                  std::string(c10::toString(image.scalar_type())));
    }
    at::Tensor normalized =
        (image - mean.to(image.options()).view({3, 1, 1})) / std.to(image.options()).view({3, 1, 1});
    double min_size = static_cast<double>(options_.min_size_test);
    double max_size = static_cast<double>(options_.max_size_test);
    if (training) {
      const auto& choices = options_.min_size_train;
      const double draw = at::empty({1}).uniform_(0.0, static_cast<double>(choices.size()), generator).item<double>();
      min_size = static_cast<double>(choices[static_cast<size_t>(draw)]);
      max_size = static_cast<double>(options_.max_size_train);
    }
    const ImageSize original{image.size(1), image.size(2)};
    const ImageSize size = resized_size(original, min_size, max_size);
    resized.push_back(at::upsample_bilinear2d(normalized.unsqueeze(0), {size[0], size[1]}, /*align_corners=*/false,
                                              c10::nullopt, c10::nullopt)[0]);
    batch.image_sizes.push_back(size);
    if (targets) {
      DetectionTargets& target = (*targets)[i];
      target.boxes = resize_boxes(target.boxes, original, size);
      if (target.masks.defined()) {
        target.masks =
            target.masks.numel() == 0
                ? at::zeros({target.masks.size(0), size[0], size[1]}, target.masks.options().dtype(at::kByte))
                : at::upsample_nearest2d(target.masks.unsqueeze(1).to(at::kFloat), {size[0], size[1]}, c10::nullopt,
                                         c10::nullopt)
                      .select(1, 0)
                      .to(at::kByte);
      }
    }
  }
  int64_t height = 0, width = 0;
  for (const auto& size : batch.image_sizes) {
    height = std::max(height, size[0]);
    width = std::max(width, size[1]);
  }
  const int64_t stride = options_.size_divisible;
  height = (height + stride - 1) / stride * stride;
  width = (width + stride - 1) / stride * stride;
  batch.tensors = at::zeros({static_cast<int64_t>(resized.size()), 3, height, width}, resized[0].options());
  for (size_t i = 0; i < resized.size(); ++i) {
    batch.tensors[static_cast<int64_t>(i)]
        .narrow(1, 0, resized[i].size(1))
        .narrow(2, 0, resized[i].size(2))
        .copy_(resized[i]);
  }
  return batch;
}

void ImageTransform::postprocess(std::vector<Detections>& detections, const std::vector<ImageSize>& resized_sizes,
                                 const std::vector<ImageSize>& original_sizes) const {
  for (size_t i = 0; i < detections.size(); ++i) {
    Detections& d = detections[i];
    d.boxes = resize_boxes(d.boxes, resized_sizes[i], original_sizes[i]);
    if (d.masks.defined()) {
      d.masks = ops::paste_masks_in_image(d.masks, d.boxes, original_sizes[i][0], original_sizes[i][1]);
    }
  }
}

}  // namespace dtrain::vision::modeling
