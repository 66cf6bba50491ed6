#include "training/gradient_step.h"

namespace dtrain::training {

void float32_step(const at::Tensor& loss, GradientPath& path, const GradientEdit& edit) {
  path.zero_grad();
  loss.backward();
  path.wait_for_gradients();
  if (edit) edit();
  path.apply();
}

bool float16_step(const at::Tensor& loss, GradientPath& path, vision::solver::LossScaler& scaler,
                  const std::vector<at::Tensor>& parameters, const GradientEdit& edit) {
  path.zero_grad();
  scaler.scale_loss(loss).backward();
  path.wait_for_gradients();
  const bool finite = scaler.unscale_gradients(parameters);
  scaler.update(finite);
  if (!finite) return false;
  if (edit) edit();
  path.apply();
  return true;
}

}  // namespace dtrain::training
