#include "vision/modeling/box_head.h"

#include "vision/modeling/autocast.h"

namespace dtrain::vision::modeling {

BoxHeadImpl::BoxHeadImpl(int64_t in_features, int64_t representation_size) {
  fc6_ = register_module("fc6", torch::nn::Linear(in_features, representation_size));
  fc7_ = register_module("fc7", torch::nn::Linear(representation_size, representation_size));
}

at::Tensor BoxHeadImpl::forward(const at::Tensor& pooled) {
  return fc7_->forward(fc6_->forward(pooled.flatten(1)).relu_()).relu_();
}

BoxPredictorImpl::BoxPredictorImpl(int64_t in_features, int64_t num_classes) {
  cls_score_ = register_module("cls_score", torch::nn::Linear(in_features, num_classes));
  bbox_pred_ = register_module("bbox_pred", torch::nn::Linear(in_features, num_classes * 4));
}

std::pair<at::Tensor, at::Tensor> BoxPredictorImpl::forward(const at::Tensor& features) {
  const at::Tensor x = features.flatten(1);
  // Scores and box deltas leave the network in float32 whatever autocast computed them in.
  return {full_precision(cls_score_->forward(x)), full_precision(bbox_pred_->forward(x))};
}

}  // namespace dtrain::vision::modeling
