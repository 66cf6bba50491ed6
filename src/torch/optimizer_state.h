// Loading an optimizer from LibTorch's archive completely. LibTorch 1.13's
// Optimizer::load() restores per-parameter state but drops the saved param-group options
// (learning rate, momentum, betas, ...); this also applies those, through the options'
// own virtual deserialisation, so it works for every optimizer type.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>

namespace dtrain::libtorch {

void load_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

// Where the optimizer's parameters live (its first parameter's device; the CPU without any):
// where their saved state must be loaded to, since LibTorch loads it to the CPU otherwise.
at::Device parameters_device(const torch::optim::Optimizer& optimizer);

}  // namespace dtrain::libtorch
