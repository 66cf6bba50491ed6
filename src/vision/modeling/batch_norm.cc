#include "vision/modeling/batch_norm.h"

namespace dtrain::vision::modeling {

BatchNormImpl::BatchNormImpl(int64_t channels, bool frozen) : frozen_(frozen) {
  if (frozen) {
    weight_ = register_buffer("weight", torch::ones({channels}));
    bias_ = register_buffer("bias", torch::zeros({channels}));
  } else {
    weight_ = register_parameter("weight", torch::ones({channels}));
    bias_ = register_parameter("bias", torch::zeros({channels}));
  }
  running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
  running_var_ = register_buffer("running_var", torch::ones({channels}));
  if (!frozen) num_batches_tracked_ = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
}

at::Tensor BatchNormImpl::forward(const at::Tensor& x) {
  if (frozen_) {
    const at::Tensor scale = weight_ * (running_var_ + kEps).rsqrt();
    const at::Tensor shift = bias_ - running_mean_ * scale;
    return x * scale.view({1, -1, 1, 1}) + shift.view({1, -1, 1, 1});
  }
  if (is_training()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked_.add_(1);
  }
  return at::batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(), /*momentum=*/0.1, kEps,
                        /*cudnn_enabled=*/false);
}

}  // namespace dtrain::vision::modeling
