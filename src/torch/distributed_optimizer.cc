// Gradient allreduce overlapped with backward. Each parameter's AccumulateGrad node gets a
// post hook: when backward has added this pass's gradient into param.grad, the hook counts
// the pass and, on the last declared pass, starts an asynchronous allreduce of the gradient
// in place. step() waits for all of them. This is where PyTorch DDP's reducer hooks in too.
//
// `synchronized` is what keeps a gradient from being reduced twice: synchronize() sets it,
// and only what changes the gradients clears it (a backward pass, step(), zero_grad()).
// step() and zero_grad() clear it on every rank alike, so a rank that ran no backward pass
// this step still reduces (zeros) and meets the ranks that did.
//
// A lost peer (WorkersLostError) can break a step anywhere: in a hook, in synchronize(). The
// step is then over: the next zero_grad() (an elastic loop's retry starts with one) sees a
// reduction still started or `broken` (a hook could not even start one) and forgets the step's
// passes and reductions, so the retry starts clean.
//
// Two other ways to reduce, in files of their own: Sharding (ZeRO, parameter_shards.h) and
// PowerSGD (power_sgd.h).
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <utility>

#include "dtrain/torch.h"
#include "torch/gradient_ready_hook.h"
#include "torch/parameter_shards.h"
#include "torch/power_sgd.h"

namespace dtrain::libtorch {

struct DistributedOptimizer::Impl {
  struct Slot {
    std::string name;  // the allreduce name: prefix + parameter name
    at::Tensor parameter;
    int passes = 0;
    bool started = false;
    Handle handle;
    at::Tensor wire;  // what travels: the gradient itself, or its copy in `copy_buffer`
    // Kept from step to step: with LibTorch's default CPU allocator, which returns large blocks
    // to the system, a fresh tensor every step costs more in page faults than the copy itself
    // (48 MB of float32 to bfloat16: 12 ms into a new tensor, ~2 ms into this one).
    at::Tensor copy_buffer;
    // PowerSGD's state of this gradient (made at its first compressed step), and whether this
    // step's reduction is PowerSGD's rather than `handle`.
    std::unique_ptr<PowerSgdGradient> power_sgd;
    bool power_sgd_step = false;
    // A shared_ptr up to torch 2.11, an intrusive_ptr after: whatever grad_accumulator returns.
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>())) accumulator;
    std::uintptr_t hook_key = 0;
  };

  DistributedOptimizerOptions options;
  std::vector<Slot> slots;                // one per named parameter, whether or not it requires a gradient now
  std::unordered_set<const void*> named;  // the named parameters' TensorImpls
  std::optional<ParameterShards> shards;  // with sharding: who steps which parameter
  bool synchronized = false;
  bool broken = false;              // a reduction of this step failed: zero_grad() starts over
  int skipping = 0;                 // live SkipSynchronize guards
  std::int64_t steps = 0;           // step() calls: PowerSGD starts at options.power_sgd.start_step
  std::int64_t reducing_bytes = 0;  // handed to allreduces since the last synchronize()
  std::int64_t reduced_bytes = 0;   // in the last synchronize()

  // A reduction started that synchronize() has not collected: at zero_grad() that is a step
  // given up (a lost peer broke it, or the loop moved on), whose results must not land later.
  bool step_in_flight() const {
    for (const auto& slot : slots) {
      if (slot.started) return true;
    }
    return shards && shards->in_flight();
  }

  // Forgets the step in progress: passes counted and reductions started (waited for, so the
  // runtime writes into no gradient afterwards; in a broken world they have failed already).
  void abandon_step() {
    for (auto& slot : slots) {
      if (slot.power_sgd_step) {
        slot.power_sgd->abandon();
      } else if (slot.started) {
        try {
          slot.handle.wait();
        } catch (const std::exception&) {}
      }
      slot.started = false;
      slot.power_sgd_step = false;
      slot.passes = 0;
      slot.wire = at::Tensor();
    }
    if (shards) shards->abandon_step();
    reducing_bytes = 0;
    broken = false;
  }

  // Hooks the parameter's gradient accumulator, once it requires a gradient.
  void attach_hook(std::size_t index) {
    Slot& slot = slots[index];
    if (slot.accumulator || !slot.parameter.requires_grad()) return;
    slot.accumulator = torch::autograd::impl::grad_accumulator(slot.parameter);
    if (!slot.accumulator) {
      throw Error("dtrain::DistributedOptimizer: parameter '" + slot.name + "' is not a leaf tensor");
    }
    slot.hook_key = slot.accumulator->add_post_hook(
        std::make_unique<GradientReadyHook>([this, index] { on_gradient_ready(index); }));
  }

  // A parameter the optimizer updates but nobody reduces trains on each rank alone.
  void require_trainable_parameters_named(torch::optim::Optimizer& optimizer) const {
    std::ostringstream missing;
    int count = 0;
    const auto& groups = optimizer.param_groups();
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& parameters = groups[g].params();
      for (std::size_t i = 0; i < parameters.size(); ++i) {
        const at::Tensor& parameter = parameters[i];
        if (!parameter.requires_grad() || named.count(parameter.unsafeGetTensorImpl())) continue;
        if (++count > 8) continue;
        missing << (count > 1 ? ", " : "") << "param_groups()[" << g << "][" << i << "] of shape " << parameter.sizes();
      }
    }
    if (count == 0) return;
    throw Error("dtrain::DistributedOptimizer: " + std::to_string(count) + " parameter" + (count > 1 ? "s" : "") +
                " of the optimizer " + (count > 1 ? "are" : "is") + " missing from named_parameters (" + missing.str() +
                (count > 8 ? ", ..." : "") +
                "): left out, it would train on each rank alone; pass every parameter the optimizer updates, "
                "e.g. module->named_parameters().pairs()");
  }

  // The dtype `grad` travels in when compression shrinks it. Only float32 and float64 shrink:
  // a float16 or bfloat16 gradient is as small already (and bfloat16 would lose its range).
  std::optional<at::ScalarType> wire_dtype(const at::Tensor& grad) const {
    if (options.compression == Compression::kNone) return std::nullopt;
    if (grad.scalar_type() != at::kFloat && grad.scalar_type() != at::kDouble) return std::nullopt;
    if (static_cast<std::int64_t>(grad.nbytes()) < options.compression_min_bytes) return std::nullopt;
    return options.compression == Compression::kFp16 ? at::kHalf : at::kBFloat16;
  }

  // `grad` in `dtype`, contiguous, on a device the runtime reaches, in the slot's buffer.
  static const at::Tensor& copy_for_the_wire(Slot& slot, const at::Tensor& grad, at::ScalarType dtype) {
    const at::Device device = reachable_device(grad);
    at::Tensor& buffer = slot.copy_buffer;
    if (!buffer.defined() || buffer.sizes() != grad.sizes() || buffer.scalar_type() != dtype ||
        buffer.device() != device) {
      buffer = at::empty(grad.sizes(), grad.options().dtype(dtype).device(device));
    }
    buffer.copy_(grad);
    return buffer;
  }

  ReduceOptions reduce_options() const {
    ReduceOptions reduce;
    reduce.op = options.op;
    if (options.op == ReduceOp::kAverage) {
      reduce.prescale_factor = 1.0 / options.gradient_predivide_factor;
      reduce.postscale_factor = options.gradient_predivide_factor;
    }
    return reduce;
  }

  // The sharding plan, made at the first step and again when the world changes (an elastic
  // reset). A parameter that changes owner then has the state its new owner holds: none,
  // unless consolidate_state(0) ran before the commit the reset restored (TorchState::sync
  // then gives every rank rank 0's whole state).
  ParameterShards& shards_for_this_world() {
    if (!shards || shards->world_size() != dtrain::size() || shards->rank() != dtrain::rank()) {
      std::vector<at::Tensor> parameters;
      std::vector<std::string> names;
      for (const auto& slot : slots) {
        parameters.push_back(slot.parameter);
        names.push_back(slot.name.substr(options.name_prefix.size()));
      }
      shards.reset();  // its reductions in flight finished first
      shards.emplace(std::move(parameters), std::move(names), dtrain::size(), dtrain::rank(),
                     options.sharding_bucket_bytes, reduce_options(), options.name_prefix);
    }
    return *shards;
  }

  bool approximated_by_power_sgd(const at::Tensor& grad) const {
    if (options.power_sgd.rank < 1 || steps < options.power_sgd.start_step) return false;
    if (grad.scalar_type() != at::kFloat && grad.scalar_type() != at::kDouble) return false;
    return power_sgd_compresses(grad.sizes(), static_cast<std::int64_t>(grad.nbytes()), options.power_sgd,
                                options.compression_min_bytes);
  }

  void start(Slot& slot) {
    at::Tensor& grad = slot.parameter.mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(slot.parameter);  // no gradient here: contribute zeros
    // An embedding's sparse gradient is reduced as dense (Horovod's sparse_as_dense): exact
    // and right for every optimizer, at the cost of the whole table on the wire.
    if (grad.is_sparse()) grad = grad.to_dense();
    if (approximated_by_power_sgd(grad)) {
      if (!slot.power_sgd) slot.power_sgd = std::make_unique<PowerSgdGradient>(slot.name, options.power_sgd);
      try {
        slot.power_sgd->start(grad);
      } catch (const WorkersLostError&) {
        broken = true;
        throw;
      }
      slot.power_sgd_step = true;
      slot.started = true;
      return;
    }
    const std::optional<at::ScalarType> smaller = wire_dtype(grad);
    if (smaller || !usable_in_place(grad)) {
      slot.wire = copy_for_the_wire(slot, grad, smaller.value_or(grad.scalar_type()));
    } else {
      slot.wire = grad;  // zero copy: reduce in place in param.grad
    }
    const TensorView view = view_of(slot.wire);
    reducing_bytes += static_cast<std::int64_t>(slot.wire.nbytes());
    try {
      slot.handle = dtrain::allreduce_async(slot.name, view, view, reduce_options(), options.process_set);
    } catch (const WorkersLostError&) {
      broken = true;
      throw;
    }
    slot.started = true;
  }

  // ZeRO-2: what backward's hooks have not started goes now; each rank keeps its shard.
  void reduce_scatter_gradients() {
    for (auto& slot : slots) slot.passes = 0;  // the step is over, reduced or failed
    try {
      shards_for_this_world().reduce_scatter_gradients();
    } catch (const std::exception&) {
      broken = true;  // zero_grad() starts the retry clean
      throw;
    }
  }

  // Starts what the hooks have not, then collects every slot's reduction. Every slot is
  // collected even after one failed; the first error is rethrown as it is (a
  // WorkersLostError stays one).
  void reduce_every_gradient() {
    for (auto& slot : slots) {
      if (!slot.started && slot.parameter.requires_grad()) start(slot);
    }
    std::exception_ptr first_error;
    // PowerSGD's second round: every Q allreduce in flight before waiting for any.
    for (auto& slot : slots) {
      if (!slot.power_sgd_step) continue;
      try {
        slot.power_sgd->start_q();
      } catch (const std::exception&) {
        if (!first_error) first_error = std::current_exception();
      }
    }
    for (auto& slot : slots) {
      try {
        if (slot.started) collect(slot);
      } catch (const std::exception&) {
        if (!first_error) first_error = std::current_exception();
        if (slot.power_sgd_step) slot.power_sgd->abandon();
      }
      slot.wire = at::Tensor();
      slot.started = false;
      slot.power_sgd_step = false;
      slot.passes = 0;
    }
    reduced_bytes = reducing_bytes;
    reducing_bytes = 0;
    if (first_error) std::rethrow_exception(first_error);
  }

  // Waits for the slot's reduction and puts the result in its gradient.
  void collect(Slot& slot) {
    if (slot.power_sgd_step) {
      slot.power_sgd->finish();
      reducing_bytes += slot.power_sgd->factor_bytes();
      return;
    }
    slot.handle.wait();
    at::Tensor& grad = slot.parameter.mutable_grad();
    if (!slot.wire.is_same(grad)) grad.copy_(slot.wire);
  }

  void on_gradient_ready(std::size_t index) {
    Slot& slot = slots[index];
    synchronized = false;  // this gradient changed: it has not been reduced
    ++slot.passes;
    if (slot.passes > options.backward_passes_per_step) {
      throw Error("dtrain::DistributedOptimizer: gradient of '" + slot.name + "' computed " +
                  std::to_string(slot.passes) + " times before step(), but backward_passes_per_step is " +
                  std::to_string(options.backward_passes_per_step) +
                  "; call step() after each pass or raise backward_passes_per_step");
    }
    if (slot.passes < options.backward_passes_per_step) return;
    if (options.sharding == Sharding::kGradients) {
      try {
        shards_for_this_world().gradient_ready(index);  // ZeRO-2: reduced by buckets, each to its owner
      } catch (const WorkersLostError&) {
        broken = true;
        throw;
      }
    } else {
      start(slot);
    }
  }
};

DistributedOptimizer::DistributedOptimizer(torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                                           DistributedOptimizerOptions options)
    : optimizer_(optimizer), impl_(std::make_unique<Impl>()) {
  if (options.backward_passes_per_step < 1) {
    throw Error("dtrain::DistributedOptimizer: backward_passes_per_step must be at least 1, got " +
                std::to_string(options.backward_passes_per_step));
  }
  if (options.gradient_predivide_factor <= 0) {
    throw Error("dtrain::DistributedOptimizer: gradient_predivide_factor must be positive");
  }
  if (options.gradient_predivide_factor != 1.0 && options.op != ReduceOp::kAverage) {
    throw Error("dtrain::DistributedOptimizer: gradient_predivide_factor applies to the Average op only");
  }
  if (options.op != ReduceOp::kAverage && options.op != ReduceOp::kSum) {
    throw Error("dtrain::DistributedOptimizer: op must be Average or Sum");
  }
  if (options.sharding == Sharding::kGradients && options.compression != Compression::kNone) {
    throw Error("dtrain::DistributedOptimizer: compression does not combine with Sharding::kGradients");
  }
  const PowerSgdOptions& power_sgd = options.power_sgd;
  if (power_sgd.rank < 0 || power_sgd.start_step < 0 || power_sgd.min_compression_rate < 0) {
    throw Error(
        "dtrain::DistributedOptimizer: power_sgd.rank, start_step and min_compression_rate must not be "
        "negative");
  }
  if (power_sgd.rank > 0 && (options.compression != Compression::kNone || options.sharding != Sharding::kNone ||
                             options.op != ReduceOp::kAverage || options.gradient_predivide_factor != 1.0)) {
    throw Error(
        "dtrain::DistributedOptimizer: PowerSGD approximates the average of float gradients: it does not "
        "combine with compression, sharding, op Sum or a gradient_predivide_factor");
  }
  if (!options.process_set.is_global() &&
      (options.sharding != Sharding::kNone || options.power_sgd.rank > 0 || !options.process_set.included())) {
    throw Error("dtrain::DistributedOptimizer: " + options.process_set.describe() +
                (options.process_set.included() ? ": process sets do not combine with sharding or PowerSGD"
                                                : " does not include rank " + std::to_string(dtrain::rank())));
  }
  if (options.sharding_bucket_bytes < 1) {
    throw Error("dtrain::DistributedOptimizer: sharding_bucket_bytes must be positive, got " +
                std::to_string(options.sharding_bucket_bytes));
  }
  if (options.compression_min_bytes < 0) {
    throw Error("dtrain::DistributedOptimizer: compression_min_bytes must not be negative, got " +
                std::to_string(options.compression_min_bytes));
  }
  impl_->options = std::move(options);
  std::unordered_set<std::string> names;
  for (const auto& [name, parameter] : named_parameters) {
    if (!names.insert(name).second) {
      throw Error("dtrain::DistributedOptimizer: parameter name '" + name + "' appears twice; names must be unique");
    }
    if (!impl_->named.insert(parameter.unsafeGetTensorImpl()).second) {
      throw Error("dtrain::DistributedOptimizer: parameter '" + name + "' is the same tensor as an earlier one");
    }
    Impl::Slot slot;
    slot.name = impl_->options.name_prefix + name;
    slot.parameter = parameter;
    impl_->slots.push_back(std::move(slot));
  }
  impl_->require_trainable_parameters_named(optimizer_);
  for (std::size_t i = 0; i < impl_->slots.size(); ++i) impl_->attach_hook(i);
}

DistributedOptimizer::~DistributedOptimizer() {
  for (auto& slot : impl_->slots) {
    if (slot.accumulator) slot.accumulator->del_post_hook(slot.hook_key);
    if (slot.power_sgd_step) {
      slot.power_sgd->abandon();
    } else if (slot.started) {
      try {
        slot.handle.wait();  // the runtime must not write into a gradient after we are gone
      } catch (const std::exception&) {}
    }
  }
}

void DistributedOptimizer::synchronize() {
  impl_->require_trainable_parameters_named(optimizer_);
  if (impl_->synchronized) return;  // reduced already, and no backward pass since
  if (impl_->options.sharding == Sharding::kGradients) {
    impl_->reduce_scatter_gradients();
  } else {
    impl_->reduce_every_gradient();
  }
  // Parameters unfrozen since the last step: their first gradient was reduced above; from
  // now on their hooks overlap it with backward.
  for (std::size_t i = 0; i < impl_->slots.size(); ++i) impl_->attach_hook(i);
  impl_->synchronized = true;
}

void DistributedOptimizer::step() {
  if (impl_->skipping > 0) {
    if (impl_->shards && impl_->shards->in_flight()) {
      throw Error(
          "dtrain::DistributedOptimizer: step() inside skip_synchronize() while gradient buckets are being "
          "reduce-scattered (a backward pass ran after synchronize()); call synchronize() first");
    }
    for (const auto& slot : impl_->slots) {
      if (slot.started) {
        throw Error("dtrain::DistributedOptimizer: step() inside skip_synchronize() while the allreduce of '" +
                    slot.name + "' is in flight (a backward pass ran after synchronize()); call synchronize() first");
      }
    }
  } else {
    synchronize();
  }
  if (impl_->options.sharding == Sharding::kNone) {
    optimizer_.step();
  } else {
    ParameterShards& shards = impl_->shards_for_this_world();
    {
      const ParameterShards::SetAside others(shards);  // the optimizer steps this rank's shard only
      optimizer_.step();
    }
    shards.drop_state_owned_elsewhere(optimizer_);
    shards.allgather_parameters();
  }
  impl_->synchronized = false;
  ++impl_->steps;
}

void DistributedOptimizer::consolidate_state(int root) {
  if (impl_->options.sharding == Sharding::kNone) return;
  if (root < 0 || root >= dtrain::size()) {
    throw Error("dtrain::DistributedOptimizer::consolidate_state: root " + std::to_string(root) +
                " is not a rank of this world of " + std::to_string(dtrain::size()));
  }
  impl_->shards_for_this_world().consolidate_state(optimizer_, root);
}

std::int64_t DistributedOptimizer::reduced_bytes() const { return impl_->reduced_bytes; }

std::vector<std::string> DistributedOptimizer::owned_parameters() const {
  if (impl_->options.sharding != Sharding::kNone) return impl_->shards_for_this_world().owned_names();
  std::vector<std::string> all;
  for (const auto& slot : impl_->slots) all.push_back(slot.name.substr(impl_->options.name_prefix.size()));
  return all;
}

void DistributedOptimizer::zero_grad() {
  if (impl_->broken || impl_->step_in_flight()) impl_->abandon_step();
  optimizer_.zero_grad();
  impl_->synchronized = false;
}

DistributedOptimizer::SkipSynchronize::SkipSynchronize(DistributedOptimizer& owner) : owner_(owner) {
  ++owner_.impl_->skipping;
}

DistributedOptimizer::SkipSynchronize::~SkipSynchronize() { --owner_.impl_->skipping; }

}  // namespace dtrain::libtorch
