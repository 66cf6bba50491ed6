#pragma once

// The box branch of the RoI heads: torchvision's TwoMLPHead (two fully
// connected layers with ReLU on the pooled 7x7 features, state names fc6,
// fc7) and FastRCNNPredictor (class logits cls_score and per-class box
// deltas bbox_pred).
#include <torch/torch.h>

namespace dtrain::vision::modeling {

class BoxHeadImpl : public torch::nn::Module {
 public:
  BoxHeadImpl(int64_t in_features, int64_t representation_size);
  at::Tensor forward(const at::Tensor& pooled);  // [R, C, 7, 7] -> [R, representation]

 private:
  torch::nn::Linear fc6_{nullptr}, fc7_{nullptr};
};
TORCH_MODULE(BoxHead);

class BoxPredictorImpl : public torch::nn::Module {
 public:
  BoxPredictorImpl(int64_t in_features, int64_t num_classes);
  // -> class logits [R, K] and box deltas [R, 4K]
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& features);

 private:
  torch::nn::Linear cls_score_{nullptr}, bbox_pred_{nullptr};
};
TORCH_MODULE(BoxPredictor);

}  // namespace dtrain::vision::modeling
