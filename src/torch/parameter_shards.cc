#include "torch/parameter_shards.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "torch/optimizer_state.h"

namespace dtrain::libtorch {

std::vector<int> assign_owners(const std::vector<std::int64_t>& sizes, std::vector<std::int64_t>& load) {
  std::vector<std::size_t> largest_first(sizes.size());
  std::iota(largest_first.begin(), largest_first.end(), 0);
  std::stable_sort(largest_first.begin(), largest_first.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  std::vector<int> owners(sizes.size(), 0);
  for (std::size_t index : largest_first) {
    const auto lightest = std::min_element(load.begin(), load.end());  // the first of equals
    owners[index] = static_cast<int>(lightest - load.begin());
    *lightest += sizes[index];
  }
  return owners;
}

ParameterShards::ParameterShards(std::vector<at::Tensor> parameters, std::vector<std::string> names, int world_size,
                                 int rank, std::int64_t bucket_bytes, ReduceOptions reduce, std::string name_prefix)
    : parameters_(std::move(parameters)),
      names_(std::move(names)),
      owners_(parameters_.size(), 0),
      bucket_of_(parameters_.size(), 0),
      ready_(parameters_.size(), false),
      world_size_(world_size),
      rank_(rank),
      reduce_(reduce),
      name_prefix_(std::move(name_prefix)) {
  // Buckets from the last parameter back; a new one when full or at another dtype or device.
  std::int64_t filled = 0;
  for (std::size_t i = parameters_.size(); i-- > 0;) {
    const at::Tensor& parameter = parameters_[i];
    const at::TensorOptions options = at::TensorOptions().dtype(parameter.scalar_type()).device(parameter.device());
    const bool fits = !buckets_.empty() && buckets_.back().options.dtype() == options.dtype() &&
                      buckets_.back().options.device() == options.device() && filled < bucket_bytes;
    if (!fits) {
      buckets_.emplace_back();
      buckets_.back().options = options;
      filled = 0;
    }
    buckets_.back().members.push_back(i);
    filled += parameter.numel() * static_cast<std::int64_t>(parameter.element_size());
    bucket_of_[i] = buckets_.size() - 1;
  }
  std::vector<std::int64_t> load(static_cast<std::size_t>(world_size_), 0);
  for (Bucket& bucket : buckets_) {
    std::vector<std::int64_t> sizes;
    for (std::size_t i : bucket.members) sizes.push_back(parameters_[i].numel());
    const std::vector<int> owners = assign_owners(sizes, load);
    for (std::size_t k = 0; k < owners.size(); ++k) owners_[bucket.members[k]] = owners[k];
  }
}

ParameterShards::~ParameterShards() { abandon_step(); }

std::vector<std::string> ParameterShards::owned_names() const {
  std::vector<std::string> owned;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    if (owns(i)) owned.push_back(names_[i]);
  }
  return owned;
}

ParameterShards::Layout ParameterShards::lay_out(const Bucket& bucket, bool only_trainable) const {
  Layout layout;
  layout.by_owner.resize(static_cast<std::size_t>(world_size_));
  std::vector<std::int64_t> values(static_cast<std::size_t>(world_size_), 0);
  // Members were added last parameter first; a segment lists its parameters in their order.
  for (auto it = bucket.members.rbegin(); it != bucket.members.rend(); ++it) {
    if (only_trainable && !parameters_[*it].requires_grad()) continue;
    const auto owner = static_cast<std::size_t>(owners_[*it]);
    layout.by_owner[owner].push_back(*it);
    values[owner] += parameters_[*it].numel();
  }
  layout.segment = *std::max_element(values.begin(), values.end());
  return layout;
}

void ParameterShards::gradient_ready(std::size_t index) {
  ready_[index] = true;
  const std::size_t b = bucket_of_[index];
  if (buckets_[b].started) return;
  for (std::size_t i : buckets_[b].members) {
    if (parameters_[i].requires_grad() && !ready_[i]) return;
  }
  start(b);
}

void ParameterShards::start(std::size_t bucket_index) {
  Bucket& bucket = buckets_[bucket_index];
  bucket.layout = lay_out(bucket, /*only_trainable=*/true);
  if (bucket.layout.segment == 0) return;  // nothing in it trains now
  bucket.flat = at::zeros({world_size_ * bucket.layout.segment}, bucket.options);
  for (int owner = 0; owner < world_size_; ++owner) {
    std::int64_t offset = owner * bucket.layout.segment;
    for (std::size_t i : bucket.layout.by_owner[static_cast<std::size_t>(owner)]) {
      const at::Tensor& grad = parameters_[i].grad();
      at::Tensor place = bucket.flat.narrow(0, offset, parameters_[i].numel());
      if (grad.defined()) {
        place.copy_((grad.is_sparse() ? grad.to_dense() : grad).reshape(-1));
      } else {
        place.zero_();  // no gradient on this rank: contribute zeros
      }
      offset += parameters_[i].numel();
    }
  }
  bucket.handle =
      reducescatter_async(bucket.flat, name_prefix_ + "zero.gradients." + std::to_string(bucket_index), reduce_);
  bucket.started = true;
}

void ParameterShards::reduce_scatter_gradients() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (!buckets_[b].started) start(b);
  }
  std::exception_ptr first_error;  // rethrown as it is: a WorkersLostError stays one
  for (Bucket& bucket : buckets_) {
    if (!bucket.started) continue;
    bucket.started = false;
    try {
      const at::Tensor mine = bucket.handle.wait();
      // The handle holds the flat buffer too (it staged it): both go, or the buffer lives on.
      bucket.handle = TensorHandle();
      bucket.flat = at::Tensor();
      std::int64_t offset = 0;
      for (std::size_t i : bucket.layout.by_owner[static_cast<std::size_t>(rank_)]) {
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
        for (std::size_t i : bucket.layout.by_owner[static_cast<std::size_t>(owner)]) {
          parameters_[i].mutable_grad() = at::Tensor();  // ZeRO-2: the owner has it
        }
      }
    } catch (const std::exception&) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  std::fill(ready_.begin(), ready_.end(), false);
  if (first_error) std::rethrow_exception(first_error);
}

void ParameterShards::abandon_step() {
  for (Bucket& bucket : buckets_) {
    if (bucket.started) {
      try {
        bucket.handle.wait();
      } catch (const std::exception&) {}
    }
    bucket.handle = TensorHandle();
    bucket.flat = at::Tensor();
    bucket.started = false;
  }
  std::fill(ready_.begin(), ready_.end(), false);
}

bool ParameterShards::in_flight() const {
  return std::any_of(buckets_.begin(), buckets_.end(), [](const Bucket& bucket) { return bucket.started; });
}

void ParameterShards::allgather_parameters() {
  torch::NoGradGuard no_grad;  // writing the new values is no computation to differentiate
  std::vector<std::pair<Layout, TensorHandle>> gathers;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    Layout layout = lay_out(buckets_[b], /*only_trainable=*/false);
    if (layout.segment == 0) continue;
    at::Tensor mine = at::zeros({layout.segment}, buckets_[b].options);
    std::int64_t offset = 0;
    for (std::size_t i : layout.by_owner[static_cast<std::size_t>(rank_)]) {
      mine.narrow(0, offset, parameters_[i].numel()).copy_(parameters_[i].reshape(-1));
      offset += parameters_[i].numel();
    }
    TensorHandle handle = allgather_async(mine, name_prefix_ + "zero.parameters." + std::to_string(b));
    gathers.emplace_back(std::move(layout), std::move(handle));
  }
  for (auto& [layout, handle] : gathers) {
    const at::Tensor gathered = handle.wait();
    for (int owner = 0; owner < world_size_; ++owner) {
      if (owner == rank_) continue;
      std::int64_t offset = owner * layout.segment;
      for (std::size_t i : layout.by_owner[static_cast<std::size_t>(owner)]) {
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
    if (!owns(i)) state.erase(static_cast<void*>(parameters_[i].unsafeGetTensorImpl()));
  }
}

void ParameterShards::consolidate_state(torch::optim::Optimizer& optimizer, int root) const {
  drop_state_owned_elsewhere(optimizer);  // each rank sends exactly its shard
  // The state of the parameters it holds (this rank's) and the param groups' options.
  const std::string bytes = rank_ != root ? optimizer_bytes(optimizer) : "";
  // An alltoall whose only receiver is root: each shard travels to root alone, so no other
  // rank ever holds more than its own.
  at::Tensor sent = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(sent.data_ptr(), bytes.data(), bytes.size());
  std::vector<std::int64_t> splits(static_cast<std::size_t>(world_size_), 0);
  splits[static_cast<std::size_t>(root)] = sent.numel();
  const auto [received, counts] = alltoall(sent, name_prefix_ + "zero.consolidate", splits);
  if (rank_ != root) return;
  std::int64_t offset = 0;
  for (int owner = 0; owner < world_size_; ++owner) {
    const std::int64_t count = counts[static_cast<std::size_t>(owner)];
    if (owner != root) {
      // Loading adds the sender's parameters' state and keeps what root holds of its own.
      load_optimizer_bytes(optimizer, std::string(static_cast<const char*>(received.data_ptr()) + offset,
                                                  static_cast<std::size_t>(count)));
    }
    offset += count;
  }
}

}  // namespace dtrain::libtorch
