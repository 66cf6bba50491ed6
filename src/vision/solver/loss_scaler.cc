#include "vision/solver/loss_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace dtrain::vision::solver {
namespace {

void check(const LossScalerOptions& o) {
  if (!(o.initial_scale > 0) || !std::isfinite(static_cast<float>(o.initial_scale))) {
    throw std::invalid_argument("loss scaling: the initial scale must be positive, got " +
                                std::to_string(o.initial_scale));
  }
  if (!(o.growth_factor > 1)) {
    throw std::invalid_argument("loss scaling: the growth factor must exceed 1, got " +
                                std::to_string(o.growth_factor));
  }
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1)) {
    throw std::invalid_argument("loss scaling: the backoff factor must be in (0, 1), got " +
                                std::to_string(o.backoff_factor));
  }
  if (o.growth_interval < 1) {
    throw std::invalid_argument("loss scaling: the growth interval must be at least 1, got " +
                                std::to_string(o.growth_interval));
  }
}

}  // namespace

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.initial_scale) {
  check(options_);
}

at::Tensor LossScaler::scale_loss(const at::Tensor& loss) const { return loss * scale_; }

bool LossScaler::unscale_gradients(const std::vector<at::Tensor>& parameters) const {
  std::vector<at::Tensor> cuda_grads, other_grads;
  for (const at::Tensor& parameter : parameters) {
    const at::Tensor& grad = parameter.grad();
    if (!grad.defined()) continue;
    (grad.is_cuda() ? cuda_grads : other_grads).push_back(grad);
  }
  const double inverse = 1.0 / scale_;
  bool finite = true;
  if (!cuda_grads.empty()) {
    // GradScaler's fused kernel: one pass over every gradient, one flag on the device.
    const auto on_gpu = at::TensorOptions().dtype(at::kFloat).device(cuda_grads.front().device());
    at::Tensor found_inf = at::zeros({1}, on_gpu);
    at::_amp_foreach_non_finite_check_and_unscale_(cuda_grads, found_inf, at::full({1}, inverse, on_gpu));
    finite = found_inf.item<float>() == 0;
  }
  if (!other_grads.empty()) {  // LibTorch 1.13 has that kernel for CUDA only
    at::Tensor all_finite = at::ones({}, at::kBool);
    for (at::Tensor& grad : other_grads) {
      all_finite = all_finite.logical_and(grad.isfinite().all());
      grad.mul_(inverse);
    }
    finite = finite && all_finite.item<bool>();
  }
  return finite;
}

void LossScaler::update(bool gradients_finite) {
  if (!gradients_finite) {
    scale_ *= options_.backoff_factor;
    good_steps_ = 0;
    ++skipped_;
    return;
  }
  if (++good_steps_ == options_.growth_interval) {
    // The scale multiplies float32 losses: one past float32's range would make every later
    // step overflow, so it stays within (GradScaler's rule).
    if (std::isfinite(static_cast<float>(scale_ * options_.growth_factor))) scale_ *= options_.growth_factor;
    good_steps_ = 0;
  }
}

void LossScaler::restore(double scale, int64_t good_steps) {
  if (!(scale > 0) || !std::isfinite(static_cast<float>(scale)) || good_steps < 0 ||
      good_steps >= options_.growth_interval) {
    throw std::invalid_argument("loss scaling: cannot restore scale " + std::to_string(scale) + " after " +
                                std::to_string(good_steps) + " good steps");
  }
  scale_ = scale;
  good_steps_ = good_steps;
}

}  // namespace dtrain::vision::solver
