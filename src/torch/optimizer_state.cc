#include "torch/optimizer_state.h"

#include "dtrain/dtrain.h"

namespace dtrain::libtorch {

void load_optimizer_state(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
  optimizer.load(archive);
  torch::serialize::InputArchive groups;
  archive.read("param_groups", groups);
  auto& param_groups = optimizer.param_groups();
  for (std::size_t i = 0; i < param_groups.size(); ++i) {
    torch::serialize::InputArchive group, options;
    groups.read("param_groups/" + std::to_string(i), group);
    group.read("options", options);
    param_groups[i].options().serialize(options);
  }
}

at::Device parameters_device(const torch::optim::Optimizer& optimizer) {
  for (const auto& group : optimizer.param_groups()) {
    if (!group.params().empty()) return group.params().front().device();
  }
  return at::kCPU;
}

}  // namespace dtrain::libtorch
