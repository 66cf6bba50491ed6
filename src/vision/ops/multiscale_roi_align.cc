#include "vision/ops/multiscale_roi_align.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "vision/ops/box_ops.h"
#include "vision/ops/roi_align.h"

namespace dtrain::vision::ops {

LevelMapper::LevelMapper(int64_t k_min, int64_t k_max, double canonical_scale, int64_t canonical_level, double eps)
    : k_min_(k_min), k_max_(k_max), canonical_scale_(canonical_scale), canonical_level_(canonical_level), eps_(eps) {
  TORCH_CHECK(k_min <= k_max, "LevelMapper: k_min (", k_min, ") exceeds k_max (", k_max, ")");
}

at::Tensor LevelMapper::operator()(const std::vector<at::Tensor>& boxes) const {
  TORCH_CHECK(!boxes.empty(), "LevelMapper: no box tensors given");
  std::vector<at::Tensor> areas;
  areas.reserve(boxes.size());
  for (const at::Tensor& b : boxes) areas.push_back(box_area(b));
  const at::Tensor s = at::sqrt(at::cat(areas, 0));
  // eps is added as a tensor of the boxes' dtype, as torchvision does.
  const at::Tensor levels =
      at::floor(canonical_level_ + at::log2(s / canonical_scale_) + at::scalar_tensor(eps_, s.options()));
  return at::clamp(levels, static_cast<double>(k_min_), static_cast<double>(k_max_)).to(at::kLong) - k_min_;
}

double infer_scale(int64_t feature_height, int64_t image_height) {
  TORCH_CHECK(feature_height > 0 && image_height > 0, "infer_scale: sizes must be positive, got ", "feature height ",
              feature_height, " and image height ", image_height);
  const double approx = static_cast<double>(feature_height) / static_cast<double>(image_height);
  const double exponent = at::scalar_tensor(approx, at::kFloat).log2().round().item<double>();
  return std::pow(2.0, exponent);
}

MultiScaleRoIAlign::MultiScaleRoIAlign(std::array<int64_t, 2> output_size, int64_t sampling_ratio,
                                       double canonical_scale, int64_t canonical_level)
    : output_size_(output_size),
      sampling_ratio_(sampling_ratio),
      canonical_scale_(canonical_scale),
      canonical_level_(canonical_level) {
  TORCH_CHECK(output_size[0] > 0 && output_size[1] > 0, "MultiScaleRoIAlign: output_size must be positive, got ",
              output_size[0], "x", output_size[1]);
}

void MultiScaleRoIAlign::setup_scales(const std::vector<at::Tensor>& features,
                                      const std::vector<std::array<int64_t, 2>>& image_sizes) {
  TORCH_CHECK(!image_sizes.empty(), "MultiScaleRoIAlign: no image sizes given");
  int64_t max_height = 0;
  for (const auto& size : image_sizes) max_height = std::max(max_height, size[0]);
  std::vector<double> scales;
  for (const at::Tensor& f : features) scales.push_back(infer_scale(f.size(-2), max_height));
  // -log2 of the finest and coarsest scales, in float32 and truncated as torchvision.
  const auto level_of = [](double scale) {
    return static_cast<int64_t>(-at::scalar_tensor(scale, at::kFloat).log2().item<float>());
  };
  mapper_.emplace(level_of(scales.front()), level_of(scales.back()), canonical_scale_, canonical_level_);
  scales_ = std::move(scales);
}

at::Tensor MultiScaleRoIAlign::forward(const std::vector<at::Tensor>& features, const std::vector<at::Tensor>& boxes,
                                       const std::vector<std::array<int64_t, 2>>& image_sizes) {
  TORCH_CHECK(!features.empty(), "MultiScaleRoIAlign::forward: no feature maps given");
  for (size_t l = 0; l < features.size(); ++l) {
    TORCH_CHECK(features[l].dim() == 4, "MultiScaleRoIAlign::forward: feature map ", l, " must be [B, C, H, W], got ",
                features[l].sizes());
  }
  if (scales_.empty()) setup_scales(features, image_sizes);
  TORCH_CHECK(scales_.size() == features.size(), "MultiScaleRoIAlign::forward: ", features.size(),
              " feature maps, but the scales were set up for ", scales_.size());

  // rois [K, 5]: (image index, x1, y1, x2, y2).
  std::vector<at::Tensor> rows;
  rows.reserve(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    TORCH_CHECK(boxes[i].dim() == 2 && boxes[i].size(1) == 4, "MultiScaleRoIAlign::forward: ", "boxes[", i,
                "] must be [N, 4], got ", boxes[i].sizes());
    const at::Tensor ids = at::full({boxes[i].size(0), 1}, static_cast<double>(i), boxes[i].options());
    rows.push_back(at::cat({ids, boxes[i]}, 1));
  }
  const at::Tensor rois = rows.empty() ? at::empty({0, 5}, features[0].options()) : at::cat(rows, 0);
  const int64_t out_h = output_size_[0];
  const int64_t out_w = output_size_[1];

  if (features.size() == 1) {
    return roi_align(features[0], rois, scales_[0], out_h, out_w, sampling_ratio_,
                     /*aligned=*/false);
  }

  const at::Tensor levels = (*mapper_)(boxes);
  at::Tensor result = at::zeros({rois.size(0), features[0].size(1), out_h, out_w}, features[0].options());
  for (size_t l = 0; l < features.size(); ++l) {
    const at::Tensor idx = at::nonzero(levels == static_cast<int64_t>(l)).view(-1);
    if (idx.numel() == 0) continue;
    const at::Tensor pooled =
        roi_align(features[l], rois.index_select(0, idx), scales_[l], out_h, out_w, sampling_ratio_, /*aligned=*/false);
    result = result.index_put({idx}, pooled.to(result.scalar_type()));
  }
  return result;
}

}  // namespace dtrain::vision::ops
