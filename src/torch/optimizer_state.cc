#include "torch/optimizer_state.h"

#include <torch/serialize/output-archive.h>

#include <sstream>

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

std::string optimizer_bytes(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

void load_optimizer_bytes(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  if (bytes.empty()) return;
  torch::serialize::InputArchive archive;
  std::istringstream in(bytes);
  archive.load_from(in, parameters_device(optimizer));
  load_optimizer_state(optimizer, archive);
}

at::Device parameters_device(const torch::optim::Optimizer& optimizer) {
  for (const auto& group : optimizer.param_groups()) {
    if (!group.params().empty()) return group.params().front().device();
  }
  return at::kCPU;
}

}  // namespace dtrain::libtorch
