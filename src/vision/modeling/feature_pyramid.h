#pragma once

// The feature pyramid network (Lin et al.) on top of the ResNet stages, as
// torchvision builds it for Mask R-CNN: a 1x1 lateral ("inner") and a 3x3
// output ("layer") convolution per stage, top-down nearest-neighbour
// upsampling, and one extra level made by a stride-2 max pool of the
// coarsest output (LastLevelMaxPool). State names follow torchvision 0.13+
// (inner_blocks.N.0.weight).
#include <torch/torch.h>

namespace dtrain::vision::modeling {

class FeaturePyramidImpl : public torch::nn::Module {
 public:
  FeaturePyramidImpl(const std::vector<int64_t>& in_channels, int64_t out_channels);
  // stages finest first (C2..C5) -> {P2, P3, P4, P5, P6 (pool)}.
  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& stages);
  int64_t out_channels() const { return out_channels_; }

 private:
  int64_t out_channels_;
  std::vector<torch::nn::Conv2d> inner_, output_;
};
TORCH_MODULE(FeaturePyramid);

}  // namespace dtrain::vision::modeling
