#include "torch/parameter_shards.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <sstream>

#include "dtrain/torch.h"
#include "torch/optimizer_state.h"

namespace dtrain::libtorch {

std::vector<int> assign_owners(const std::vector<std::int64_t>& sizes, int world_size) {
  std::vector<std::size_t> largest_first(sizes.size());
  std::iota(largest_first.begin(), largest_first.end(), 0);
  std::stable_sort(largest_first.begin(), largest_first.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<std::int64_t> load(static_cast<std::size_t>(world_size), 0);
  std::vector<int> owners(sizes.size(), 0);
  for (std::size_t index : largest_first) {
    const auto lightest = std::min_element(load.begin(), load.end());  // the first of equals
    owners[index] = static_cast<int>(lightest - load.begin());
    *lightest += sizes[index];
  }
  return owners;
}

ParameterShards::ParameterShards(std::vector<at::Tensor> parameters, std::vector<std::string> names, int world_size,
                                 int rank)
    : parameters_(std::move(parameters)), names_(std::move(names)), world_size_(world_size), rank_(rank) {
  std::vector<std::int64_t> sizes;
  sizes.reserve(parameters_.size());
  for (const auto& parameter : parameters_) sizes.push_back(parameter.numel());
  owners_ = assign_owners(sizes, world_size_);
}

std::vector<std::string> ParameterShards::owned_names() const {
  std::vector<std::string> owned;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (owns(i)) owned.push_back(names_[i]);
  }
  return owned;
}

std::vector<ParameterShards::Layout> ParameterShards::layouts(bool only_trainable) const {
  // Keyed by name so every rank lists the buffers in the same order.
  std::map<std::string, Layout> by_key;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    const at::Tensor& parameter = parameters_[i];
    if (only_trainable && !parameter.requires_grad()) continue;
    const std::string key = std::string(c10::toString(parameter.scalar_type())) + "." + parameter.device().str();
    Layout& layout = by_key[key];
    if (layout.members.empty()) {
      layout.key = key;
      layout.options = at::TensorOptions().dtype(parameter.scalar_type()).device(parameter.device());
      layout.members.resize(static_cast<std::size_t>(world_size_));
    }
    layout.members[static_cast<std::size_t>(owners_[i])].push_back(i);
  }
  std::vector<Layout> all;
  for (auto& [key, layout] : by_key) {
    for (const auto& members : layout.members) {
      std::int64_t values = 0;
      for (std::size_t i : members) values += parameters_[i].numel();
      layout.segment = std::max(layout.segment, values);
    }
    all.push_back(std::move(layout));
  }
  return all;
}

void ParameterShards::reduce_scatter_gradients(const ReduceOptions& options, const std::string& name_prefix) {
  const std::vector<Layout> all = layouts(/*only_trainable=*/true);
  std::vector<TensorHandle> handles;
  for (const Layout& layout : all) {
    at::Tensor flat = at::zeros({world_size_ * layout.segment}, layout.options);
    for (int owner = 0; owner < world_size_; ++owner) {
      std::int64_t offset = owner * layout.segment;
      for (std::size_t i : layout.members[static_cast<std::size_t>(owner)]) {
        const at::Tensor& parameter = parameters_[i];
        const at::Tensor& grad = parameter.grad();
        const std::int64_t values = parameter.numel();
        if (grad.defined())
          flat.narrow(0, offset, values).copy_((grad.is_sparse() ? grad.to_dense() : grad).reshape(-1));
        offset += values;
      }
    }
    handles.push_back(reducescatter_async(flat, name_prefix + "zero.gradients." + layout.key, options));
  }
  for (std::size_t l = 0; l < all.size(); ++l) {
    const at::Tensor mine = handles[l].wait();
    std::int64_t offset = 0;
    for (std::size_t i : all[l].members[static_cast<std::size_t>(rank_)]) {
      at::Tensor& grad = parameters_[i].mutable_grad();
      const at::Tensor reduced = mine.narrow(0, offset, parameters_[i].numel()).view(parameters_[i].sizes());
      if (grad.defined() && !grad.is_sparse()) {
        grad.copy_(reduced);
      } else {
        grad = reduced.clone();
      }
      offset += parameters_[i].numel();
    }
    for (int owner = 0; owner < world_size_; ++owner) {
      if (owner == rank_) continue;
      for (std::size_t i : all[l].members[static_cast<std::size_t>(owner)])
        parameters_[i].mutable_grad() = at::Tensor();
    }
  }
}

void ParameterShards::allgather_parameters(const std::string& name_prefix) {
  torch::NoGradGuard no_grad;  // writing the new values is no computation to differentiate
  const std::vector<Layout> all = layouts(/*only_trainable=*/false);
  std::vector<TensorHandle> handles;
  for (const Layout& layout : all) {
    at::Tensor mine = at::zeros({layout.segment}, layout.options);
    std::int64_t offset = 0;
    for (std::size_t i : layout.members[static_cast<std::size_t>(rank_)]) {
      mine.narrow(0, offset, parameters_[i].numel()).copy_(parameters_[i].reshape(-1));
      offset += parameters_[i].numel();
    }
    handles.push_back(allgather_async(mine, name_prefix + "zero.parameters." + layout.key));
  }
  for (std::size_t l = 0; l < all.size(); ++l) {
    const at::Tensor gathered = handles[l].wait();
    for (int owner = 0; owner < world_size_; ++owner) {
      if (owner == rank_) continue;
      std::int64_t offset = owner * all[l].segment;
      for (std::size_t i : all[l].members[static_cast<std::size_t>(owner)]) {
        parameters_[i].copy_(gathered.narrow(0, offset, parameters_[i].numel()).view(parameters_[i].sizes()));
        offset += parameters_[i].numel();
      }
    }
  }
}

ParameterShards::SetAside::SetAside(ParameterShards& shards) : shards_(shards) {
  for (std::size_t i = 0; i < shards_.parameters_.size(); ++i) {
    at::Tensor& grad = shards_.parameters_[i].mutable_grad();
    if (shards_.owns(i) || !grad.defined()) continue;
    kept_.emplace_back(i, std::move(grad));
    grad = at::Tensor();
  }
}

ParameterShards::SetAside::~SetAside() {
  for (auto& [index, grad] : kept_) shards_.parameters_[index].mutable_grad() = std::move(grad);
}

void ParameterShards::drop_state_owned_elsewhere(torch::optim::Optimizer& optimizer) const {
  auto& state = optimizer.state();
  if (state.empty()) return;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (!owns(i)) state.erase(c10::guts::to_string(parameters_[i].unsafeGetTensorImpl()));
  }
}

void ParameterShards::consolidate_state(torch::optim::Optimizer& optimizer, int root) const {
  drop_state_owned_elsewhere(optimizer);  // each rank sends exactly its shard
  for (int owner = 0; owner < world_size_; ++owner) {
    std::string bytes;
    if (rank_ == owner && owner != root) {
      // LibTorch's archive of the optimizer: the state of the parameters it holds (this
      // rank's) and the param groups' options, for any optimizer type.
      torch::serialize::OutputArchive archive;
      optimizer.save(archive);
      std::ostringstream out;
      archive.save_to(out);
      bytes = out.str();
    }
    if (owner == root) continue;
    bytes = broadcast_bytes(bytes, owner, "zero.consolidate." + std::to_string(owner));
    if (rank_ != root) continue;
    // Loading adds the sender's parameters' state and keeps what root holds of its own.
    torch::serialize::InputArchive archive;
    std::istringstream in(bytes);
    archive.load_from(in, parameters_device(optimizer));
    load_optimizer_state(optimizer, archive);
  }
}

}  // namespace dtrain::libtorch
