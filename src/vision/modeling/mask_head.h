#pragma once

// The mask branch of the RoI heads: torchvision's MaskRCNNHeads (a stack of
// 3x3 conv + ReLU on the pooled 14x14 features; state names N.0 as
// torchvision 0.13+) and MaskRCNNPredictor (a stride-2 transposed conv,
// conv5_mask, to 28x28, then one logit map per class, mask_fcn_logits).
#include <torch/torch.h>

namespace dtrain::vision::modeling {

class MaskHeadImpl : public torch::nn::Module {
 public:
  MaskHeadImpl(int64_t in_channels, int64_t conv_dim, int64_t num_convs);
  at::Tensor forward(const at::Tensor& pooled);
  int64_t out_channels() const { return out_channels_; }

 private:
  std::vector<torch::nn::Conv2d> convs_;
  int64_t out_channels_;
};
TORCH_MODULE(MaskHead);

class MaskPredictorImpl : public torch::nn::Module {
 public:
  MaskPredictorImpl(int64_t in_channels, int64_t conv_dim, int64_t num_classes);
  at::Tensor forward(const at::Tensor& features);  // -> [R, K, 2M, 2M] logits

 private:
  torch::nn::ConvTranspose2d conv5_mask_{nullptr};
  torch::nn::Conv2d mask_fcn_logits_{nullptr};
};
TORCH_MODULE(MaskPredictor);

}  // namespace dtrain::vision::modeling
