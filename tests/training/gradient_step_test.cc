// The engine's steps: what float32_step and float16_step do with a loss, in which order, and
// that float16's skips the update whose gradients overflowed; the learning-rate hook.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "training/gradient_step.h"
#include "training/lr_schedule_hook.h"
#include "training/trainer.h"

namespace dtrain::training {
namespace {

// A one-process path: plain SGD with learning rate 1 (weight -= grad), its calls journaled.
class JournaledPath : public GradientPath {
 public:
  JournaledPath(at::Tensor weight, std::vector<std::string>& journal) : weight_(std::move(weight)), journal_(journal) {}
  void zero_grad() override {
    journal_.push_back("zero_grad");
    if (weight_.grad().defined()) weight_.mutable_grad().zero_();
  }
  void wait_for_gradients() override { journal_.push_back("wait"); }
  void apply() override {
    journal_.push_back("apply");
    torch::NoGradGuard no_grad;
    weight_.sub_(weight_.grad());
  }

 private:
  at::Tensor weight_;
  std::vector<std::string>& journal_;
};

at::Tensor weight_of(std::vector<float> values) { return torch::tensor(values).requires_grad_(); }

TEST(Float32Step, BackwardThenTheGradientsWayThenTheEditThenTheUpdate) {
  std::vector<std::string> journal;
  at::Tensor w = weight_of({1.0f, 2.0f});
  JournaledPath path(w, journal);
  // loss = 3 * sum(w): the gradient is 3 everywhere, clipped (the edit) to 0.5.
  float32_step((w * 3).sum(), path, [&] {
    journal.push_back("edit");
    w.mutable_grad().clamp_(-0.5, 0.5);
  });
  EXPECT_EQ(journal, (std::vector<std::string>{"zero_grad", "wait", "edit", "apply"}));
  EXPECT_TRUE(torch::equal(w.detach(), torch::tensor({0.5f, 1.5f})));
}

TEST(Float32Step, ASecondStepDoesNotAccumulateTheFirstStepsGradients) {
  std::vector<std::string> journal;
  at::Tensor w = weight_of({0.0f});
  JournaledPath path(w, journal);
  float32_step(w.sum(), path);
  float32_step(w.sum(), path);
  EXPECT_EQ(w.item<float>(), -2.0f);  // two steps of gradient 1, not 1 + 2
}

TEST(Float16Step, UpdatesWithTheUnscaledGradientWhenItIsFinite) {
  std::vector<std::string> journal;
  at::Tensor w = weight_of({4.0f});
  JournaledPath path(w, journal);
  vision::solver::LossScaler scaler;
  EXPECT_TRUE(float16_step((w * 2).sum(), path, scaler, {w}, [&] { journal.push_back("edit"); }));
  EXPECT_EQ(journal, (std::vector<std::string>{"zero_grad", "wait", "edit", "apply"}));
  EXPECT_EQ(w.item<float>(), 2.0f);  // 4 - 2: the scale is gone from the gradient
  EXPECT_EQ(scaler.skipped_steps(), 0);
}

TEST(Float16Step, SkipsTheUpdateAndBacksOffWhenTheScaledGradientOverflows) {
  std::vector<std::string> journal;
  at::Tensor w = weight_of({4.0f});
  JournaledPath path(w, journal);
  vision::solver::LossScaler scaler;
  const double scale = scaler.scale();
  const float huge = std::numeric_limits<float>::max();
  EXPECT_FALSE(float16_step((w * huge).sum(), path, scaler, {w}, [&] { journal.push_back("edit"); }));
  EXPECT_EQ(journal, (std::vector<std::string>{"zero_grad", "wait"}));
  EXPECT_EQ(w.item<float>(), 4.0f);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.scale(), scale / 2);
}

TEST(LrScheduleHook, SetsEveryParameterGroupsRateBeforeEachStep) {
  at::Tensor a = weight_of({1.0f}), b = weight_of({1.0f});
  torch::optim::SGD sgd(
      std::vector<torch::optim::OptimizerParamGroup>{
          torch::optim::OptimizerParamGroup({a}),
          torch::optim::OptimizerParamGroup({b}, std::make_unique<torch::optim::SGDOptions>(0.5))},
      torch::optim::SGDOptions(0.1));
  std::vector<double> seen;
  Trainer trainer([&](int64_t) {
    for (auto& group : sgd.param_groups()) seen.push_back(group.options().get_lr());
  });
  const auto& lr = trainer.emplace<LrScheduleHook>([](int64_t i) { return 0.01 * static_cast<double>(i + 1); }, sgd);
  int64_t iteration = 1;
  trainer.train(iteration, 3);
  EXPECT_EQ(seen, (std::vector<double>{0.02, 0.02, 0.03, 0.03}));
  EXPECT_EQ(lr.lr(), 0.03);
}

}  // namespace
}  // namespace dtrain::training
