// A post hook on a parameter's AccumulateGrad node: it runs once backward has added this
// pass's gradient into param.grad. DistributedOptimizer starts the gradient's allreduce
// there, PSOptimizer its pushes; this is where PyTorch DDP's reducer hooks in too.
#pragma once

#include <torch/csrc/autograd/function_hook.h>

#include <functional>
#include <utility>

namespace dtrain::libtorch {

class GradientReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  explicit GradientReadyHook(std::function<void()> on_ready) : on_ready_(std::move(on_ready)) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list& /*inputs*/) override {
    on_ready_();
    return outputs;
  }

 private:
  std::function<void()> on_ready_;
};

}  // namespace dtrain::libtorch
