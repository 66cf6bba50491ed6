// MultiTensorSgd against LibTorch's own SGD: the same parameters and momentum buffers, step
// by step, for every option the trainer sets (and nesterov, dampening), with parameters that
// have no gradient, several groups and a learning rate changed between steps.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <vector>

#include "vision/solver/fused_sgd_kernel.h"
#include "vision/solver/multi_tensor_sgd.h"

namespace dtrain::vision::solver {
namespace {

// Two groups of parameters of several shapes, the same values for every call.
std::vector<torch::optim::OptimizerParamGroup> make_groups(const torch::optim::SGDOptions& options) {
  torch::manual_seed(7);
  // Small ones, and ones of many vector widths plus a tail, one longer than a parallel chunk.
  std::vector<at::Tensor> first{torch::randn({3, 4}).requires_grad_(), torch::randn({5}).requires_grad_(),
                                torch::randn({2, 3, 3, 3}).requires_grad_(), torch::randn({33, 65}).requires_grad_(),
                                torch::randn({70001}).requires_grad_()};
  std::vector<at::Tensor> second{torch::randn({6}).requires_grad_(), torch::randn({1}).requires_grad_()};
  auto second_options = std::make_unique<torch::optim::SGDOptions>(options);
  second_options->lr(options.lr() * 0.5).weight_decay(0);
  return {torch::optim::OptimizerParamGroup(first),
          torch::optim::OptimizerParamGroup(second, std::move(second_options))};
}

// Gradients for step `step`: the same for both optimizers; parameter 1 has none on step 1
// (its momentum then starts a step later).
void set_gradients(torch::optim::Optimizer& optimizer, int step) {
  torch::manual_seed(100 + step);
  int index = 0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) {
      at::Tensor grad = torch::randn(p.sizes());
      if (step == 1 && index == 1) {
        p.mutable_grad() = at::Tensor();
      } else {
        p.mutable_grad() = grad;
      }
      ++index;
    }
  }
}

void expect_same_steps(const torch::optim::SGDOptions& options) {
  torch::optim::SGD reference(make_groups(options), options);
  MultiTensorSgd multi(make_groups(options), options);
  for (int step = 0; step < 5; ++step) {
    if (step == 3) {  // the schedule changes the learning rate of every group
      for (auto* optimizer :
           {static_cast<torch::optim::Optimizer*>(&reference), static_cast<torch::optim::Optimizer*>(&multi)}) {
        for (auto& group : optimizer->param_groups()) {
          auto& o = static_cast<torch::optim::SGDOptions&>(group.options());
          o.lr(o.lr() * 0.1);
        }
      }
    }
    set_gradients(reference, step);
    set_gradients(multi, step);
    reference.step();
    multi.step();
    for (size_t g = 0; g < reference.param_groups().size(); ++g) {
      const auto& expected = reference.param_groups()[g].params();
      const auto& actual = multi.param_groups()[g].params();
      for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_TRUE(actual[i].equal(expected[i])) << "step " << step << ", group " << g << ", parameter " << i;
        if (options.momentum() == 0) continue;
        const auto& expected_state = reference.state().at(optimizer_state_key(expected[i]));
        const auto& actual_state = multi.state().at(optimizer_state_key(actual[i]));
        EXPECT_TRUE(static_cast<torch::optim::SGDParamState&>(*actual_state)
                        .momentum_buffer()
                        .equal(static_cast<torch::optim::SGDParamState&>(*expected_state).momentum_buffer()))
            << "momentum buffer, step " << step << ", group " << g << ", parameter " << i;
      }
    }
  }
}

TEST(MultiTensorSgd, StepsAsLibTorchsSgdWithMomentumAndWeightDecay) {
  expect_same_steps(torch::optim::SGDOptions(0.02).momentum(0.9).weight_decay(1e-4));
}

TEST(MultiTensorSgd, StepsAsLibTorchsSgdWithoutMomentum) {
  expect_same_steps(torch::optim::SGDOptions(0.1).weight_decay(1e-4));
}

TEST(MultiTensorSgd, StepsAsLibTorchsSgdWithNesterovAndWithDampening) {
  expect_same_steps(torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true));
  expect_same_steps(torch::optim::SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(1e-3));
  // 1 - 0.9 in double, rounded to float, is not 1 - 0.9f: the kernel must use the former.
  expect_same_steps(torch::optim::SGDOptions(0.05).momentum(0.9).dampening(0.9).weight_decay(1e-4));
}

// The fused kernel on its own, against the operations torch::optim::SGD performs, for lengths
// around the vector widths and every option; where ATen itself rounds its multiply-adds twice
// (no AVX2), the kernel is not used and this comparison does not apply.
TEST(FusedSgdKernel, StepsAsLibTorchsOperations) {
  if (!aten_fuses_multiply_add()) GTEST_SKIP() << "ATen rounds a.add(b, alpha) twice here; MultiTensorSgd falls back";
  struct Case {
    double lr, momentum, dampening, weight_decay;
    bool nesterov;
  };
  for (const Case c : {Case{0.1, 0, 0, 0, false}, Case{0.1, 0, 0, 1e-4, false}, Case{0.02, 0.9, 0, 1e-4, false},
                       Case{0.05, 0.9, 0.9, 0, false}, Case{0.05, 0.9, 0, 1e-3, true}}) {
    for (const int64_t n : {1, 15, 16, 17, 31, 33, 100, 1000}) {
      torch::manual_seed(n);
      at::Tensor p = torch::randn({n}), expected = p.clone(), buffer = torch::empty({n}), expected_buffer;
      for (int step = 0; step < 3; ++step) {
        const at::Tensor g = torch::randn({n});
        at::Tensor d = c.weight_decay != 0 ? g.add(expected, c.weight_decay) : g;
        if (c.momentum != 0) {
          expected_buffer = step == 0 ? d.clone() : expected_buffer.mul_(c.momentum).add_(d, 1 - c.dampening);
          d = c.nesterov ? d.add(expected_buffer, c.momentum) : expected_buffer;
        }
        expected.add_(d, -c.lr);
        const SgdCoefficients k{static_cast<float>(c.lr), static_cast<float>(c.momentum),
                                static_cast<float>(1 - c.dampening), static_cast<float>(c.weight_decay), c.nesterov};
        fused_sgd_step(p.data_ptr<float>(), g.data_ptr<float>(), c.momentum != 0 ? buffer.data_ptr<float>() : nullptr,
                       n, k, step == 0);
        EXPECT_TRUE(p.equal(expected)) << "length " << n << ", step " << step << ", momentum " << c.momentum
                                       << ", dampening " << c.dampening << ", nesterov " << c.nesterov;
        if (c.momentum != 0) {
          EXPECT_TRUE(buffer.equal(expected_buffer)) << "buffer, length " << n << ", step " << step;
        }
      }
    }
  }
}

// What the fused CPU kernel does not take (a strided gradient, float64, bfloat16) steps through
// the multi-tensor kernels, beside float32 tensors that it does take, to the same bits.
TEST(MultiTensorSgd, StepsTensorsTheFusedKernelDoesNotTakeAsLibTorchsSgd) {
  const torch::optim::SGDOptions options = torch::optim::SGDOptions(0.03).momentum(0.9).weight_decay(1e-4);
  auto make = [] {
    torch::manual_seed(11);
    return std::vector<at::Tensor>{
        torch::randn({40, 30}).requires_grad_(), torch::randn({50}, torch::kFloat64).requires_grad_(),
        torch::randn({64}).to(torch::kBFloat16).requires_grad_(), torch::randn({100}).requires_grad_()};
  };
  std::vector<at::Tensor> expected = make(), actual = make();
  torch::optim::SGD reference(expected, options);
  MultiTensorSgd multi(actual, options);
  for (int step = 0; step < 3; ++step) {
    torch::manual_seed(200 + step);
    for (size_t i = 0; i < expected.size(); ++i) {
      // The first parameter's gradient is a transposed view: not one dense block in its order.
      at::Tensor grad = i == 0 ? torch::randn({30, 40}).t() : torch::randn(expected[i].sizes()).to(expected[i].dtype());
      expected[i].mutable_grad() = grad.clone();
      actual[i].mutable_grad() = grad.clone();  // a clone keeps the transposed strides
    }
    reference.step();
    multi.step();
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_TRUE(actual[i].equal(expected[i])) << "step " << step << ", parameter " << i;
      const auto& expected_state = reference.state().at(optimizer_state_key(expected[i]));
      const auto& actual_state = multi.state().at(optimizer_state_key(actual[i]));
      EXPECT_TRUE(static_cast<torch::optim::SGDParamState&>(*actual_state)
                      .momentum_buffer()
                      .equal(static_cast<torch::optim::SGDParamState&>(*expected_state).momentum_buffer()))
          << "momentum buffer, step " << step << ", parameter " << i;
    }
  }
  EXPECT_FALSE(actual[0].grad().is_contiguous());
}

TEST(MultiTensorSgd, LeavesParametersWithoutGradientsAndEmptyGroupsAlone) {
  const at::Tensor p = torch::ones({4}).requires_grad_();
  MultiTensorSgd sgd(std::vector<at::Tensor>{p}, torch::optim::SGDOptions(0.1).momentum(0.9));
  sgd.step();
  EXPECT_TRUE(p.equal(torch::ones({4})));
  EXPECT_TRUE(sgd.state().empty());
}

}  // namespace
}  // namespace dtrain::vision::solver
