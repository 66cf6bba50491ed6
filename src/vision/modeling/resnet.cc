#include "vision/modeling/resnet.h"

#include <stdexcept>
#include <string>

namespace dtrain::vision::modeling {
namespace {

torch::nn::Conv2d make_conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(false));
  // torchvision's ResNet init: He normal, fan-out mode.
  torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
  return conv;
}

std::vector<int64_t> blocks_per_stage(int64_t depth) {
  switch (depth) {
    case 18: return {2, 2, 2, 2};
    case 34: return {3, 4, 6, 3};
    case 50: return {3, 4, 6, 3};
    case 101: return {3, 4, 23, 3};
    default: throw std::invalid_argument("ResNet depth must be 18, 34, 50 or 101, got " + std::to_string(depth));
  }
}

}  // namespace

ResidualBlockImpl::ResidualBlockImpl(int64_t in_channels, int64_t planes, int64_t stride, bool bottleneck,
                                     bool frozen_norm) {
  out_channels_ = bottleneck ? planes * 4 : planes;
  if (bottleneck) {
    conv1_ = register_module("conv1", make_conv(in_channels, planes, 1, 1, 0));
    bn1_ = register_module("bn1", BatchNorm(planes, frozen_norm));
    conv2_ = register_module("conv2", make_conv(planes, planes, 3, stride, 1));
    bn2_ = register_module("bn2", BatchNorm(planes, frozen_norm));
    conv3_ = register_module("conv3", make_conv(planes, out_channels_, 1, 1, 0));
    bn3_ = register_module("bn3", BatchNorm(out_channels_, frozen_norm));
  } else {
    conv1_ = register_module("conv1", make_conv(in_channels, planes, 3, stride, 1));
    bn1_ = register_module("bn1", BatchNorm(planes, frozen_norm));
    conv2_ = register_module("conv2", make_conv(planes, planes, 3, 1, 1));
    bn2_ = register_module("bn2", BatchNorm(planes, frozen_norm));
  }
  if (stride != 1 || in_channels != out_channels_) {
    shortcut_conv_ = make_conv(in_channels, out_channels_, 1, stride, 0);
    shortcut_norm_ = BatchNorm(out_channels_, frozen_norm);
    torch::nn::Sequential downsample(shortcut_conv_, shortcut_norm_);  // names downsample.0, downsample.1
    register_module("downsample", downsample);
  }
}

at::Tensor ResidualBlockImpl::forward(const at::Tensor& x) {
  at::Tensor out = bn1_->forward(conv1_->forward(x)).relu_();
  out = bn2_->forward(conv2_->forward(out));
  if (conv3_) out = bn3_->forward(conv3_->forward(out.relu_()));
  at::Tensor identity = shortcut_conv_ ? shortcut_norm_->forward(shortcut_conv_->forward(x)) : x;
  return (out += identity).relu_();
}

ResNetImpl::ResNetImpl(int64_t depth, bool frozen_norm) {
  const std::vector<int64_t> blocks = blocks_per_stage(depth);
  const bool bottleneck = depth >= 50;
  conv1_ = register_module("conv1", make_conv(3, 64, 7, 2, 3));
  bn1_ = register_module("bn1", BatchNorm(64, frozen_norm));
  int64_t channels = 64;
  for (size_t stage = 0; stage < blocks.size(); ++stage) {
    const int64_t planes = int64_t{64} << stage;
    torch::nn::ModuleList layer;
    for (int64_t i = 0; i < blocks[stage]; ++i) {
      const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      ResidualBlock block(channels, planes, stride, bottleneck, frozen_norm);
      channels = block->out_channels();
      layer->push_back(block);
    }
    layers_.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    stage_channels_.push_back(channels);
  }
}

std::vector<at::Tensor> ResNetImpl::forward(const at::Tensor& images) {
  at::Tensor x = bn1_->forward(conv1_->forward(images)).relu_();
  x = at::max_pool2d(x, {3, 3}, {2, 2}, {1, 1});
  std::vector<at::Tensor> stages;
  for (auto& layer : layers_) {
    for (const auto& block : *layer) x = block->as<ResidualBlockImpl>()->forward(x);
    stages.push_back(x);
  }
  return stages;
}

void ResNetImpl::set_trainable_layers(int64_t k) {
  if (k < 0 || k > 5) throw std::invalid_argument("trainable layers must be in 0..5, got " + std::to_string(k));
  const std::vector<std::string> order{"layer4", "layer3", "layer2", "layer1", "conv1"};
  std::vector<std::string> trainable(order.begin(), order.begin() + k);
  if (k == 5) trainable.push_back("bn1");
  for (auto& item : named_parameters()) {
    bool train = false;
    for (const auto& prefix : trainable) train = train || item.key().rfind(prefix, 0) == 0;
    item.value().requires_grad_(train);
  }
}

}  // namespace dtrain::vision::modeling
