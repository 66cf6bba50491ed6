// Making every rank start from rank 0's state: parameters, buffers, optimizer state, and
// arbitrary bytes; plus the cross-rank average of a metric.
#include <cstring>

#include "dtrain/torch.h"
#include "torch/optimizer_state.h"

namespace dtrain::libtorch {

NamedTensors named_state(const torch::nn::Module& module) {
  NamedTensors all;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) all.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) all.emplace_back(item.key(), item.value());
  return all;
}

void broadcast_parameters(const NamedTensors& tensors, int root) {
  // Writing through the tensors' memory is invisible to autograd, as it should be here.
  torch::NoGradGuard no_grad;
  std::vector<TensorHandle> handles;
  std::vector<at::Tensor> targets;
  handles.reserve(tensors.size());
  for (const auto& [name, tensor] : tensors) {
    targets.push_back(tensor);
    handles.push_back(broadcast_async_(targets.back(), root, "broadcast.parameter." + name));
  }
  for (auto& h : handles) h.wait();
}

std::string broadcast_bytes(const std::string& bytes, int root, const std::string& name) {
  at::Tensor length = at::tensor({static_cast<std::int64_t>(bytes.size())}, at::kLong);
  broadcast_(length, root, name + ".length");
  at::Tensor data = at::empty({length.item<std::int64_t>()}, at::kByte);
  if (rank() == root && !bytes.empty()) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  broadcast_(data, root, name + ".data");
  return std::string(static_cast<const char*>(data.data_ptr()), static_cast<std::size_t>(data.numel()));
}

void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root) {
  // LibTorch's own serialization of an optimizer carries every param group's options (the
  // learning rate, momentum, betas, ...) and each parameter's state, for any optimizer type.
  const std::string bytes =
      broadcast_bytes(rank() == root ? optimizer_bytes(optimizer) : "", root, "broadcast.optimizer_state");
  if (rank() != root) load_optimizer_bytes(optimizer, bytes);
}

double metric_average(double value, const std::string& name) {
  double result = value;
  dtrain::allreduce(name, {&value, DataType::kFloat64, {1}}, {&result, DataType::kFloat64, {1}}, {ReduceOp::kAverage});
  return result;
}

}  // namespace dtrain::libtorch
