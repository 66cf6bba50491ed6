// Loading an optimizer from LibTorch's archive completely. LibTorch 1.13's
// Optimizer::load() restores per-parameter state but drops the saved param-group options
// (learning rate, momentum, betas, ...); this also applies those, through the options'
// own virtual deserialisation, so it works for every optimizer type.
#pragma once

#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>

#include <string>

namespace dtrain::libtorch {

void load_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

// The optimizer as the bytes of LibTorch's archive (every param group's options and each
// parameter's state, for any optimizer type), and back into an optimizer of the same shape,
// completely and onto its parameters' device. Empty bytes load nothing.
std::string optimizer_bytes(const torch::optim::Optimizer& optimizer);
void load_optimizer_bytes(torch::optim::Optimizer& optimizer, const std::string& bytes);

// Where the optimizer's parameters live (its first parameter's device; the CPU without any):
// where their saved state must be loaded to, since LibTorch loads it to the CPU otherwise.
at::Device parameters_device(const torch::optim::Optimizer& optimizer);

}  // namespace dtrain::libtorch
