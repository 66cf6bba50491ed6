// TorchState (include/dtrain/torch.h): what a LibTorch loop needs to survive a reset. The
// model's tensors are copied into buffers of their own (allocated at the first save, reused
// after), so a commit costs one memory copy of the model; the optimizer goes through LibTorch's
// archive, which carries every parameter's state and every group's options.

#include <sstream>

#include "dtrain/torch.h"
#include "torch/optimizer_state.h"

namespace dtrain::libtorch {
namespace {

// Counters and the sampler's position as text: "name value" lines.
std::string encode_counters(const std::map<std::string, std::int64_t>& counters) {
  std::string text;
  for (const auto& [name, value] : counters) text += name + " " + std::to_string(value) + "\n";
  return text;
}

std::map<std::string, std::int64_t> decode_counters(const std::string& text) {
  std::map<std::string, std::int64_t> counters;
  std::istringstream in(text);
  std::string name;
  std::int64_t value = 0;
  while (in >> name >> value) counters[name] = value;
  return counters;
}

}  // namespace

TorchState::TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer, ElasticSampler* sampler)
    : model_(model), optimizer_(optimizer), sampler_(sampler) {}

void TorchState::save() {
  torch::NoGradGuard no_grad;
  const NamedTensors tensors = named_state(model_);
  if (saved_tensors_.size() != tensors.size()) {
    saved_tensors_.clear();
    for (const auto& [name, tensor] : tensors) saved_tensors_.push_back(at::empty_like(tensor));
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) saved_tensors_[i].copy_(tensors[i].second);
  saved_optimizer_ = optimizer_bytes(optimizer_);
  saved_counters_ = counters_;
  if (sampler_) {
    saved_epoch_ = sampler_->epoch();
    saved_consumed_ = sampler_->consumed();
  }
}

void TorchState::restore() {
  torch::NoGradGuard no_grad;
  const NamedTensors tensors = named_state(model_);
  if (saved_tensors_.size() == tensors.size()) {
    for (std::size_t i = 0; i < tensors.size(); ++i) tensors[i].second.copy_(saved_tensors_[i]);
  }
  load_optimizer_bytes(optimizer_, saved_optimizer_);
  for (const auto& [name, value] : saved_counters_) counters_[name] = value;  // references stay valid
  if (sampler_) sampler_->set_position(saved_epoch_, saved_consumed_);
}

void TorchState::sync() {
  broadcast_parameters(named_state(model_), 0);
  broadcast_optimizer_state(optimizer_, 0);
  std::string small = encode_counters(counters_);
  if (sampler_) {
    small += "dtrain.sampler.epoch " + std::to_string(sampler_->epoch()) + "\n";
    small += "dtrain.sampler.consumed " + std::to_string(sampler_->consumed()) + "\n";
  }
  std::map<std::string, std::int64_t> received =
      decode_counters(broadcast_bytes(small, 0, "elastic.torch_state.counters"));
  if (sampler_) {
    sampler_->set_position(received["dtrain.sampler.epoch"],
                           static_cast<std::size_t>(received["dtrain.sampler.consumed"]));
    received.erase("dtrain.sampler.epoch");
    received.erase("dtrain.sampler.consumed");
  }
  for (const auto& [name, value] : received) counters_[name] = value;  // references stay valid
  save();  // every rank now holds the same committed state, new workers included
}

}  // namespace dtrain::libtorch
