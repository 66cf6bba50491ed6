#include "vision/solver/multi_tensor_sgd.h"

#include <ATen/ATen.h>

#include <memory>
#include <vector>

namespace dtrain::vision::solver {

at::Tensor MultiTensorSgd::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<at::Tensor> params, grads;
    for (const at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    // The update direction: the gradient, plus the weight decay's share of the parameter.
    std::vector<at::Tensor> directions =
        options.weight_decay() != 0 ? at::_foreach_add(grads, params, options.weight_decay()) : grads;
    if (options.momentum() != 0) {
      // A parameter's first step starts its buffer at the direction; later steps decay it
      // and add the direction, all buffers at once.
      std::vector<at::Tensor> buffers(params.size()), continuing, continuing_directions;
      for (size_t i = 0; i < params.size(); ++i) {
        const auto found = state_.find(optimizer_state_key(params[i]));
        if (found == state_.end()) {
          buffers[i] = directions[i].clone().detach();
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(buffers[i]);
          state_[optimizer_state_key(params[i])] = std::move(state);
        } else {
          buffers[i] = static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer();
          continuing.push_back(buffers[i]);
          continuing_directions.push_back(directions[i]);
        }
      }
      if (!continuing.empty()) {
        at::_foreach_mul_(continuing, options.momentum());
        at::_foreach_add_(continuing, continuing_directions, 1 - options.dampening());
      }
      directions = options.nesterov() ? at::_foreach_add(directions, buffers, options.momentum()) : buffers;
    }
    at::_foreach_add_(params, directions, -options.lr());
  }
  return loss;
}

}  // namespace dtrain::vision::solver
