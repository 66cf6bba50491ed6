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
    // In x's type, as Detectron2's FrozenBatchNorm2d: under autocast a float32 scale would
    // promote every 16-bit activation to float32 for the next convolution to cast back.
    return x * scale.to(x.scalar_type()).view({1, -1, 1, 1}) + shift.to(x.scalar_type()).view({1, -1, 1, 1});
  }
  if (is_training()) {
    torch::NoGradGuard no_grad;
    num_batches_tracked_.add_(1);
  }
  if (is_training() && cross_rank_sum_) return synchronized_forward(x);
  return at::batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(), /*momentum=*/0.1, kEps,
                        /*cudnn_enabled=*/false);
}

void BatchNormImpl::synchronize_statistics(CrossRankSum sum) {
  if (frozen_ && sum) throw std::invalid_argument("synchronized statistics need ordinary BatchNorm, not FrozenBN");
  cross_rank_sum_ = std::move(sum);
}

// Per channel, every rank contributes its sum, sum of squares and element count; the summed
// totals give the mean and the (biased) variance of the union of the ranks' batches, which
// normalise as at::batch_norm does. The running variance is updated unbiased, as PyTorch's
// BatchNorm and SyncBatchNorm do. Gradients flow through the statistics into every rank's
// input (the sum's backward), as they would through one process's batch.
at::Tensor BatchNormImpl::synchronized_forward(const at::Tensor& x) {
  constexpr double kMomentum = 0.1;
  const int64_t channels = x.size(1);
  // Sums of squares overflow float16: the statistics are taken in the parameters' type.
  const at::Tensor wide = x.to(weight_.scalar_type());
  const at::Tensor count = torch::full({1}, static_cast<double>(x.numel() / channels), wide.options());
  const at::Tensor local = torch::cat({wide.sum({0, 2, 3}), (wide * wide).sum({0, 2, 3}), count});
  const at::Tensor total = cross_rank_sum_(local);
  const at::Tensor n = total.narrow(0, 2 * channels, 1).detach();
  const at::Tensor mean = total.narrow(0, 0, channels) / n;
  const at::Tensor variance = (total.narrow(0, channels, channels) / n - mean * mean).clamp_min(0);
  {
    torch::NoGradGuard no_grad;
    running_mean_.mul_(1 - kMomentum).add_(mean.to(running_mean_.dtype()), kMomentum);
    running_var_.mul_(1 - kMomentum);
    if (n.is_cuda()) {
      // Reading the count would stall the GPU's queue at every BatchNorm layer of every step:
      // the unbiasing factor stays on the device there.
      const at::Tensor factor = n * kMomentum / (n - 1).clamp_min(1);
      running_var_.add_(variance.to(running_var_.dtype()) * factor.to(running_var_.dtype()));
    } else {
      const double elements = n.item<double>();
      running_var_.add_(variance.to(running_var_.dtype()), kMomentum * elements / std::max(elements - 1, 1.0));
    }
  }
  const at::Tensor scale = weight_ * (variance + kEps).rsqrt();
  const at::Tensor shift = bias_ - mean * scale;
  // Normalised in the statistics' type, stored in x's, as PyTorch's BatchNorm does for 16 bits
  // (a shift of a large mean would lose its digits in float16).
  return (wide * scale.view({1, -1, 1, 1}) + shift.view({1, -1, 1, 1})).to(x.scalar_type());
}

}  // namespace dtrain::vision::modeling
