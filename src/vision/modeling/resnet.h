#pragma once

// The ResNet body of a detection backbone (torchvision's resnet18/34/50/101
// without the average pool and classifier), returning the outputs of
// layer1..layer4 (C2..C5, strides 4, 8, 16, 32). Module and state names are
// torchvision's (conv1, bn1, layerN.i.conv1, layerN.i.downsample.0, ...), so
// torchvision's weights load by name.
#include <torch/torch.h>

#include "vision/modeling/batch_norm.h"

namespace dtrain::vision::modeling {

// A basic block (two 3x3 convolutions; ResNet 18/34) or a bottleneck (1x1,
// 3x3 with the stride, 1x1 expanding by 4; ResNet 50/101), plus the
// projection shortcut when the shape changes.
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(int64_t in_channels, int64_t planes, int64_t stride, bool bottleneck, bool frozen_norm);
  at::Tensor forward(const at::Tensor& x);
  int64_t out_channels() const { return out_channels_; }

 private:
  int64_t out_channels_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr}, shortcut_conv_{nullptr};
  BatchNorm bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr}, shortcut_norm_{nullptr};
};
TORCH_MODULE(ResidualBlock);

class ResNetImpl : public torch::nn::Module {
 public:
  // depth: 18, 34, 50 or 101 (anything else throws std::invalid_argument).
  ResNetImpl(int64_t depth, bool frozen_norm);
  // {C2, C3, C4, C5}
  std::vector<at::Tensor> forward(const at::Tensor& images);
  // Channels of C2..C5: 64..512 for basic blocks, 256..2048 for bottlenecks.
  std::vector<int64_t> stage_channels() const { return stage_channels_; }
  // torchvision's trainable_layers: k in 0..5 leaves the last k of conv1,
  // layer1, ..., layer4 trainable (and bn1 with conv1 at 5) and stops
  // gradients to every other parameter.
  void set_trainable_layers(int64_t k);

 private:
  torch::nn::Conv2d conv1_{nullptr};
  BatchNorm bn1_{nullptr};
  std::vector<torch::nn::ModuleList> layers_;
  std::vector<int64_t> stage_channels_;
};
TORCH_MODULE(ResNet);

}  // namespace dtrain::vision::modeling
