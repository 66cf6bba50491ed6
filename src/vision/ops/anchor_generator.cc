#include "vision/ops/anchor_generator.h"

#include <utility>

namespace dtrain::vision::ops {

AnchorGenerator::AnchorGenerator(std::vector<std::vector<double>> sizes, std::vector<std::vector<double>> aspect_ratios)
    : sizes_(std::move(sizes)), aspect_ratios_(std::move(aspect_ratios)) {
  TORCH_CHECK(sizes_.size() == aspect_ratios_.size(), "AnchorGenerator: ", sizes_.size(), " levels of sizes but ",
              aspect_ratios_.size(), " levels of aspect ratios; give one list of each per feature map");
  for (size_t l = 0; l < sizes_.size(); ++l) {
    TORCH_CHECK(!sizes_[l].empty() && !aspect_ratios_[l].empty(), "AnchorGenerator: level ", l,
                " has no sizes or no aspect ratios");
  }
}

at::Tensor AnchorGenerator::cell_anchors(const std::vector<double>& sizes, const std::vector<double>& aspect_ratios,
                                         at::ScalarType dtype, at::Device device) {
  const auto options = at::TensorOptions().dtype(dtype).device(device);
  const at::Tensor scales = at::tensor(sizes, at::kDouble).to(options);
  const at::Tensor ratios = at::tensor(aspect_ratios, at::kDouble).to(options);
  const at::Tensor h_ratios = at::sqrt(ratios);
  const at::Tensor w_ratios = 1 / h_ratios;
  const at::Tensor ws = (w_ratios.unsqueeze(1) * scales.unsqueeze(0)).view(-1);
  const at::Tensor hs = (h_ratios.unsqueeze(1) * scales.unsqueeze(0)).view(-1);
  return (at::stack({-ws, -hs, ws, hs}, 1) / 2).round();
}

std::vector<int64_t> AnchorGenerator::num_anchors_per_location() const {
  std::vector<int64_t> counts;
  for (size_t l = 0; l < sizes_.size(); ++l) {
    counts.push_back(static_cast<int64_t>(sizes_[l].size() * aspect_ratios_[l].size()));
  }
  return counts;
}

AnchorGenerator::Anchors AnchorGenerator::generate(std::array<int64_t, 2> image_size,
                                                   const std::vector<std::array<int64_t, 2>>& feature_sizes,
                                                   at::ScalarType dtype, at::Device device) const {
  TORCH_CHECK(feature_sizes.size() == sizes_.size(), "AnchorGenerator::generate: ", feature_sizes.size(),
              " feature maps but anchors configured for ", sizes_.size(),
              " levels; there must be one sizes / aspect-ratios entry per feature map");
  Anchors out;
  for (size_t l = 0; l < feature_sizes.size(); ++l) {
    const auto [grid_h, grid_w] = feature_sizes[l];
    TORCH_CHECK(grid_h > 0 && grid_w > 0, "AnchorGenerator::generate: feature map ", l, " has size ", grid_h, "x",
                grid_w);
    const int64_t stride_h = image_size[0] / grid_h;
    const int64_t stride_w = image_size[1] / grid_w;
    const at::Tensor base = cell_anchors(sizes_[l], aspect_ratios_[l], dtype, device);

    // Shifts are integers (int32 as in torchvision) added to the float cell anchors.
    const auto integers = at::TensorOptions().dtype(at::kInt).device(device);
    const at::Tensor shifts_x = at::arange(grid_w, integers) * stride_w;
    const at::Tensor shifts_y = at::arange(grid_h, integers) * stride_h;
    const std::vector<at::Tensor> grid = at::meshgrid({shifts_y, shifts_x}, "ij");
    const at::Tensor shift_y = grid[0].reshape(-1);
    const at::Tensor shift_x = grid[1].reshape(-1);
    const at::Tensor shifts = at::stack({shift_x, shift_y, shift_x, shift_y}, 1);
    out.per_level.push_back((shifts.view({-1, 1, 4}) + base.view({1, -1, 4})).reshape({-1, 4}));
  }
  out.all = out.per_level.empty() ? at::empty({0, 4}, at::TensorOptions().dtype(dtype).device(device))
                                  : at::cat(out.per_level, 0);
  return out;
}

}  // namespace dtrain::vision::ops
