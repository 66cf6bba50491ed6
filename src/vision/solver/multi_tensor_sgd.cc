#include "vision/solver/multi_tensor_sgd.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <memory>
#include <vector>

#include "vision/solver/fused_sgd_kernel.h"

namespace dtrain::vision::solver {
namespace {

// What the fused CPU kernel steps: float32 tensors in one dense block each.
bool fusable(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.layout() == at::kStrided && tensor.scalar_type() == at::kFloat &&
         tensor.is_contiguous() && tensor.is_non_overlapping_and_dense();
}

SgdCoefficients coefficients_of(const torch::optim::SGDOptions& options) {
  return {static_cast<float>(options.lr()), static_cast<float>(options.momentum()),
          static_cast<float>(1 - options.dampening()), static_cast<float>(options.weight_decay()), options.nesterov()};
}

}  // namespace

bool aten_fuses_multiply_add() {
  static const bool fused = [] {
    const float factor = 1 + std::ldexp(1.0f, -12);
    const float start = -(1 + std::ldexp(1.0f, -11));
    for (const int64_t n : {64, 1}) {
      const at::Tensor sum = at::full({n}, start).add(at::full({n}, factor), factor);
      if (!sum.eq(std::ldexp(1.0f, -24)).all().item<bool>()) return false;
    }
    return true;
  }();
  return fused;
}

at::Tensor MultiTensorSgd::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const bool fuse = aten_fuses_multiply_add();
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<at::Tensor> params, grads;  // what the multi-tensor kernels step
    for (const at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      if (fuse && step_fused(options, p)) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (!params.empty()) step_multi_tensor(options, params, grads);
  }
  return loss;
}

bool MultiTensorSgd::step_fused(const torch::optim::SGDOptions& options, const at::Tensor& p) {
  const at::Tensor& grad = p.grad();
  if (!fusable(p) || !fusable(grad) || grad.sizes() != p.sizes()) return false;
  at::Tensor buffer;
  bool first_step = false;
  if (options.momentum() != 0) {
    const auto found = state_.find(optimizer_state_key(p));
    if (found != state_.end()) {
      buffer = static_cast<torch::optim::SGDParamState&>(*found->second).momentum_buffer();
      if (!fusable(buffer) || buffer.sizes() != p.sizes()) return false;
    } else {
      buffer = at::empty_like(p, at::MemoryFormat::Contiguous);
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(buffer);
      state_[optimizer_state_key(p)] = std::move(state);
      first_step = true;
    }
  }
  float* parameter = p.data_ptr<float>();
  const float* gradient = grad.data_ptr<float>();
  float* velocity = buffer.defined() ? buffer.data_ptr<float>() : nullptr;
  const SgdCoefficients c = coefficients_of(options);
  at::parallel_for(0, p.numel(), at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
    fused_sgd_step(parameter + begin, gradient + begin, velocity ? velocity + begin : nullptr, end - begin, c,
                   first_step);
  });
  return true;
}

void MultiTensorSgd::step_multi_tensor(const torch::optim::SGDOptions& options, const std::vector<at::Tensor>& params,
                                       const std::vector<at::Tensor>& grads) {
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

}  // namespace dtrain::vision::solver
