// The servers' update rules against the formulas of torch.optim's documentation, computed
// here in double precision. (tests/torch checks them against LibTorch's optimizers.)
#include "ps/update_rule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dtrain::ps {
namespace {

TEST(UpdateRule, SgdWithMomentumDampeningAndWeightDecay) {
  UpdateRuleSpec rule;
  rule.momentum = 0.9;
  rule.dampening = 0.1;
  rule.weight_decay = 0.01;
  std::vector<float> p = {1.0f, -2.0f};
  UpdateState state;
  double ref_p[2] = {1.0, -2.0}, buf[2] = {0, 0};
  const float grads[3][2] = {{0.5f, 0.25f}, {-1.0f, 2.0f}, {0.1f, 0.1f}};
  for (int step = 0; step < 3; ++step) {
    apply_update(rule, 0.1, grads[step], p.data(), 2, state);
    for (int i = 0; i < 2; ++i) {
      const double d = grads[step][i] + 0.01 * ref_p[i];
      buf[i] = step == 0 ? d : 0.9 * buf[i] + 0.9 * d;
      ref_p[i] -= 0.1 * buf[i];
      EXPECT_NEAR(p[static_cast<size_t>(i)], ref_p[i], 1e-6) << "step " << step;
    }
  }
}

TEST(UpdateRule, NesterovUsesTheGradientPlusMomentumTimesBuffer) {
  UpdateRuleSpec rule;
  rule.momentum = 0.5;
  rule.nesterov = true;
  std::vector<float> p = {0.0f};
  UpdateState state;
  const float g = 1.0f;
  apply_update(rule, 1.0, &g, p.data(), 1, state);  // buf = 1; step = 1 + 0.5
  EXPECT_FLOAT_EQ(p[0], -1.5f);
  apply_update(rule, 1.0, &g, p.data(), 1, state);  // buf = 1.5; step = 1 + 0.75
  EXPECT_FLOAT_EQ(p[0], -3.25f);
}

TEST(UpdateRule, AdamWithBiasCorrection) {
  UpdateRuleSpec rule;
  rule.kind = UpdateRuleSpec::Kind::kAdam;
  rule.weight_decay = 0.001;
  std::vector<float> p = {0.5f, -0.5f, 2.0f};
  UpdateState state;
  double ref[3] = {0.5, -0.5, 2.0}, m[3] = {}, v[3] = {};
  for (int t = 1; t <= 5; ++t) {
    const float g[3] = {0.1f * static_cast<float>(t), -0.2f, 0.0f};
    apply_update(rule, 0.01, g, p.data(), 3, state);
    for (int i = 0; i < 3; ++i) {
      const double grad = g[i] + 0.001 * ref[i];
      m[i] = 0.9 * m[i] + 0.1 * grad;
      v[i] = 0.999 * v[i] + 0.001 * grad * grad;
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(0.999, t)) + 1e-8;
      ref[i] -= 0.01 / (1 - std::pow(0.9, t)) * m[i] / denom;
      EXPECT_NEAR(p[static_cast<size_t>(i)], ref[i], 1e-6) << "t=" << t << " i=" << i;
    }
  }
  EXPECT_EQ(state.steps, 5);
}

}  // namespace
}  // namespace dtrain::ps
