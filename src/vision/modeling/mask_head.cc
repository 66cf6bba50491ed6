#include "vision/modeling/mask_head.h"

#include "vision/modeling/autocast.h"

#include <string>

namespace dtrain::vision::modeling {

MaskHeadImpl::MaskHeadImpl(int64_t in_channels, int64_t conv_dim, int64_t num_convs) : out_channels_(in_channels) {
  for (int64_t i = 0; i < num_convs; ++i) {
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(out_channels_, conv_dim, 3).padding(1));
    torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
    torch::nn::init::zeros_(conv->bias);
    register_module(std::to_string(i), torch::nn::Sequential(conv, torch::nn::ReLU()));
    convs_.push_back(conv);
    out_channels_ = conv_dim;
  }
}

at::Tensor MaskHeadImpl::forward(const at::Tensor& pooled) {
  at::Tensor x = pooled;
  for (auto& conv : convs_) x = conv->forward(x).relu_();
  return x;
}

MaskPredictorImpl::MaskPredictorImpl(int64_t in_channels, int64_t conv_dim, int64_t num_classes) {
  conv5_mask_ = register_module(
      "conv5_mask", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(in_channels, conv_dim, 2).stride(2)));
  mask_fcn_logits_ = register_module("mask_fcn_logits", torch::nn::Conv2d(conv_dim, num_classes, 1));
  for (auto& item : named_parameters()) {
    if (item.key().find("weight") != std::string::npos) {
      torch::nn::init::kaiming_normal_(item.value(), 0.0, torch::kFanOut, torch::kReLU);
    } else {
      torch::nn::init::zeros_(item.value());
    }
  }
}

at::Tensor MaskPredictorImpl::forward(const at::Tensor& features) {
  // Logits leave the network in float32 whatever autocast computed them in.
  return full_precision(mask_fcn_logits_->forward(conv5_mask_->forward(features).relu_()));
}

}  // namespace dtrain::vision::modeling
