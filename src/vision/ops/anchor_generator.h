// Anchors for the region proposal network with torchvision's
// AnchorGenerator rules: per feature-map level, a set of cell anchors
// centred on the origin (one per aspect ratio and size), shifted to every
// location of the level's grid.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dtrain::vision::ops {

class AnchorGenerator {
 public:
  // sizes[l] and aspect_ratios[l] are level l's anchor sizes (in input
  // pixels) and height/width ratios; torchvision's Mask R-CNN FPN uses
  // sizes {{32}, {64}, {128}, {256}, {512}} with ratios {0.5, 1, 2} at each.
  AnchorGenerator(std::vector<std::vector<double>> sizes, std::vector<std::vector<double>> aspect_ratios);

  // [R * S, 4] anchors (x1, y1, x2, y2) centred on 0, ratios outer, sizes
  // inner: h_ratio = sqrt(r), w_ratio = 1 / h_ratio, w = w_ratio * size,
  // h = h_ratio * size, anchor = round((-w, -h, w, h) / 2), computed in dtype on device.
  static at::Tensor cell_anchors(const std::vector<double>& sizes, const std::vector<double>& aspect_ratios,
                                 at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU);

  struct Anchors {
    std::vector<at::Tensor> per_level;  // [H_l * W_l * A_l, 4] each
    at::Tensor all;                     // the levels concatenated in order
  };

  // image_size is (height, width) of the (padded) batch tensor; feature_sizes
  // one (height, width) per level. Level l's stride is
  // (image_h / H_l, image_w / W_l) in integer division; anchors are ordered
  // by location (row-major: y outer, x inner), then by cell anchor. On `device` (the
  // features').
  Anchors generate(std::array<int64_t, 2> image_size, const std::vector<std::array<int64_t, 2>>& feature_sizes,
                   at::ScalarType dtype = at::kFloat, at::Device device = at::kCPU) const;

  size_t num_levels() const { return sizes_.size(); }
  // Cell anchors per location at each level (A_l = #sizes * #ratios).
  std::vector<int64_t> num_anchors_per_location() const;

 private:
  std::vector<std::vector<double>> sizes_;
  std::vector<std::vector<double>> aspect_ratios_;
};

}  // namespace dtrain::vision::ops
