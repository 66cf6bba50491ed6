// RoIAlign over a feature pyramid with torchvision's MultiScaleRoIAlign
// rules: each box is pooled from the one level that suits its size (the FPN
// paper's equation 1) by unaligned RoIAlign.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace dtrain::vision::ops {

// Maps boxes to pyramid levels: level = floor(canonical_level +
// log2(sqrt(area) / canonical_scale) + eps), clamped to [k_min, k_max],
// returned minus k_min (so 0 is the finest level given).
class LevelMapper {
 public:
  LevelMapper(int64_t k_min, int64_t k_max, double canonical_scale = 224, int64_t canonical_level = 4,
              double eps = 1e-6);

  // boxes: one [N_i, 4] tensor per image -> [sum N_i] int64 level indices.
  at::Tensor operator()(const std::vector<at::Tensor>& boxes) const;

  int64_t k_min() const { return k_min_; }
  int64_t k_max() const { return k_max_; }

 private:
  int64_t k_min_;
  int64_t k_max_;
  double canonical_scale_;
  int64_t canonical_level_;
  double eps_;
};

// The scale of a feature map of feature_height rows relative to an image of
// image_height rows, snapped to a power of two: 2^round(log2(fh / ih)), the
// logarithm taken in float32 and rounded half to even as torchvision does.
// torchvision infers it from the heights only; so does this.
double infer_scale(int64_t feature_height, int64_t image_height);

class MultiScaleRoIAlign {
 public:
  MultiScaleRoIAlign(std::array<int64_t, 2> output_size, int64_t sampling_ratio, double canonical_scale = 224,
                     int64_t canonical_level = 4);

  // features: the pyramid levels in use, finest first, each [B, C, H_l, W_l];
  // boxes: one [N_i, 4] tensor per image (x1, y1, x2, y2 in image pixels);
  // image_sizes: one (height, width) per image before padding.
  // Returns [sum N_i, C, out_h, out_w] in the order of the boxes. As in
  // torchvision, the level scales and the level mapper are inferred from the
  // first call's shapes (the largest image height) and kept afterwards.
  // Gradients flow to the features.
  at::Tensor forward(const std::vector<at::Tensor>& features, const std::vector<at::Tensor>& boxes,
                     const std::vector<std::array<int64_t, 2>>& image_sizes);

  // Empty until the first forward.
  const std::vector<double>& scales() const { return scales_; }
  const std::optional<LevelMapper>& level_mapper() const { return mapper_; }

 private:
  void setup_scales(const std::vector<at::Tensor>& features, const std::vector<std::array<int64_t, 2>>& image_sizes);

  std::array<int64_t, 2> output_size_;
  int64_t sampling_ratio_;
  double canonical_scale_;
  int64_t canonical_level_;
  std::vector<double> scales_;
  std::optional<LevelMapper> mapper_;
};

}  // namespace dtrain::vision::ops
