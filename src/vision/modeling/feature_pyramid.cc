#include "vision/modeling/feature_pyramid.h"

namespace dtrain::vision::modeling {
namespace {

torch::nn::Conv2d make_conv(int64_t in, int64_t out, int64_t kernel) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2));
  torch::nn::init::kaiming_uniform_(conv->weight, /*a=*/1);
  torch::nn::init::zeros_(conv->bias);
  return conv;
}

}  // namespace

FeaturePyramidImpl::FeaturePyramidImpl(const std::vector<int64_t>& in_channels, int64_t out_channels)
    : out_channels_(out_channels) {
  torch::nn::ModuleList inner_blocks, layer_blocks;
  for (int64_t channels : in_channels) {
    inner_.push_back(make_conv(channels, out_channels, 1));
    output_.push_back(make_conv(out_channels, out_channels, 3));
    // Each conv sits at index 0 of its own Sequential, as torchvision's
    // Conv2dNormActivation wrapper puts it.
    inner_blocks->push_back(torch::nn::Sequential(inner_.back()));
    layer_blocks->push_back(torch::nn::Sequential(output_.back()));
  }
  register_module("inner_blocks", inner_blocks);
  register_module("layer_blocks", layer_blocks);
}

std::vector<at::Tensor> FeaturePyramidImpl::forward(const std::vector<at::Tensor>& stages) {
  TORCH_CHECK(stages.size() == inner_.size(), "feature pyramid: expected ", inner_.size(), " stages, got ",
              stages.size());
  const size_t levels = stages.size();
  std::vector<at::Tensor> outputs(levels);
  at::Tensor top_down = inner_[levels - 1]->forward(stages[levels - 1]);
  outputs[levels - 1] = output_[levels - 1]->forward(top_down);
  for (size_t i = levels - 1; i-- > 0;) {
    at::Tensor lateral = inner_[i]->forward(stages[i]);
    top_down =
        lateral + at::upsample_nearest2d(top_down, {lateral.size(2), lateral.size(3)}, c10::nullopt, c10::nullopt);
    outputs[i] = output_[i]->forward(top_down);
  }
  outputs.push_back(at::max_pool2d(outputs.back(), {1, 1}, {2, 2}, {0, 0}));
  return outputs;
}

}  // namespace dtrain::vision::modeling
