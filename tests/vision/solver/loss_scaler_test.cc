// Dynamic loss scaling: PyTorch GradScaler's rule, checked step by step on CPU gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

#include "vision/solver/loss_scaler.h"

namespace dtrain::vision::solver {
namespace {

// A parameter whose gradient is `grad`.
at::Tensor parameter_with_gradient(const at::Tensor& grad) {
  at::Tensor p = at::zeros_like(grad).requires_grad_();
  p.mutable_grad() = grad.clone();
  return p;
}

TEST(LossScaler, ScalesTheLossAndDividesFiniteGradientsBack) {
  const LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.0);
  EXPECT_EQ(scaler.scale_loss(torch::tensor(0.5f)).item<float>(), 32768.0f);
  const at::Tensor a = parameter_with_gradient(torch::tensor({65536.0f, -131072.0f}));
  const at::Tensor b = parameter_with_gradient(torch::tensor({{6.5536f}}));
  const at::Tensor no_gradient = at::zeros({3}).requires_grad_();
  EXPECT_TRUE(scaler.unscale_gradients({a, no_gradient, b}));
  EXPECT_TRUE(a.grad().equal(torch::tensor({1.0f, -2.0f})));
  EXPECT_FLOAT_EQ(b.grad().item<float>(), 1e-4f);
  EXPECT_FALSE(no_gradient.grad().defined());
}

TEST(LossScaler, FindsInfinityAndNanInAnyGradient) {
  const LossScaler scaler;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(scaler.unscale_gradients(
      {parameter_with_gradient(torch::tensor({1.0f})), parameter_with_gradient(torch::tensor({2.0f, inf}))}));
  EXPECT_FALSE(scaler.unscale_gradients({parameter_with_gradient(torch::tensor({nan, 1.0f}))}));
  EXPECT_FALSE(scaler.unscale_gradients({parameter_with_gradient(torch::tensor({-inf}))}));
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterAnIntervalOfGoodSteps) {
  LossScaler scaler({/*initial_scale=*/1024.0, /*growth_factor=*/2.0, /*backoff_factor=*/0.5,
                     /*growth_interval=*/3});
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  scaler.update(true);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.good_steps(), 2);
  scaler.update(false);  // an overflow restarts the count
  EXPECT_EQ(scaler.scale(), 256.0);
  for (int i = 0; i < 2; ++i) scaler.update(true);
  EXPECT_EQ(scaler.scale(), 256.0);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.good_steps(), 0);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, NeverGrowsPastFloat32sRange) {
  // It multiplies float32 losses: float32's range is the limit, not double's.
  const double near_the_top = static_cast<double>(std::numeric_limits<float>::max()) / 1.5;
  LossScaler scaler({near_the_top, 2.0, 0.5, 1});
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), near_the_top);
  EXPECT_TRUE(std::isfinite(scaler.scale_loss(torch::tensor(1.0f)).item<float>()));
  EXPECT_THROW(LossScaler({1e39, 2.0, 0.5, 10}), std::invalid_argument);  // inf as a float
}

TEST(LossScaler, RestoresACheckpointedStateAndRefusesOneThatCannotBe) {
  LossScaler scaler({1024.0, 2.0, 0.5, 4});
  scaler.restore(128.0, 3);
  EXPECT_EQ(scaler.scale(), 128.0);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 256.0);
  EXPECT_THROW(scaler.restore(0.0, 0), std::invalid_argument);
  EXPECT_THROW(scaler.restore(std::numeric_limits<double>::infinity(), 0), std::invalid_argument);
  EXPECT_THROW(scaler.restore(8.0, 4), std::invalid_argument);  // 4 good steps would have grown it
}

TEST(LossScaler, RefusesOptionsThatCannotWork) {
  EXPECT_THROW(LossScaler({0.0, 2.0, 0.5, 10}), std::invalid_argument);
  EXPECT_THROW(LossScaler({1.0, 1.0, 0.5, 10}), std::invalid_argument);
  EXPECT_THROW(LossScaler({1.0, 2.0, 1.0, 10}), std::invalid_argument);
  EXPECT_THROW(LossScaler({1.0, 2.0, 0.5, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace dtrain::vision::solver
