// PSOptimizer: parameter-server training behind DistributedOptimizer's interface. The same
// AccumulateGrad post hook as the allreduce path starts the pushes of a gradient's pieces
// (ps/shard_plan.h) as soon as backward has produced it; the gRPC replies, arriving on gRPC
// threads, carry each piece's value after the server's update and are kept aside until
// step() copies them into the parameters (never while backward may still read them).
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <cstring>
#include <unordered_set>
#include <utility>

#include "concurrency/mutex.h"
#include "dtrain/torch.h"
#include "torch/gradient_ready_hook.h"
#include "ps/ps_client.h"
#include "ps/ps_error.h"

namespace dtrain::libtorch {
namespace {

ps::UpdateRuleSpec rule_of(torch::optim::Optimizer& optimizer) {
  const auto& groups = optimizer.param_groups();
  if (groups.size() != 1) {
    throw Error("dtrain::PSOptimizer: the optimizer has " + std::to_string(groups.size()) +
                " parameter groups; parameter servers apply one update rule, so use one group");
  }
  ps::UpdateRuleSpec rule;
  auto& options = groups.front().options();
  if (auto* sgd = dynamic_cast<const torch::optim::SGDOptions*>(&options)) {
    rule.kind = ps::UpdateRuleSpec::Kind::kSgd;
    rule.momentum = sgd->momentum();
    rule.dampening = sgd->dampening();
    rule.nesterov = sgd->nesterov();
    rule.weight_decay = sgd->weight_decay();
  } else if (auto* adam = dynamic_cast<const torch::optim::AdamOptions*>(&options)) {
    if (adam->amsgrad())
      throw Error("dtrain::PSOptimizer: Adam with amsgrad is not supported by the parameter servers");
    rule.kind = ps::UpdateRuleSpec::Kind::kAdam;
    rule.beta1 = std::get<0>(adam->betas());
    rule.beta2 = std::get<1>(adam->betas());
    rule.eps = adam->eps();
    rule.weight_decay = adam->weight_decay();
  } else {
    throw Error("dtrain::PSOptimizer: parameter servers run torch::optim::SGD or Adam; wrap one of those");
  }
  return rule;
}

}  // namespace

struct PSOptimizer::Impl {
  struct Slot {
    std::string name;
    at::Tensor parameter;
    bool pushed = false;
    // A shared_ptr up to torch 2.11, an intrusive_ptr after: whatever grad_accumulator returns.
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>())) accumulator;
    std::uintptr_t hook_key = 0;
  };

  torch::optim::Optimizer* optimizer = nullptr;
  std::unique_ptr<ps::PsClient> client;
  std::vector<Slot> slots;
  std::string mode;
  std::int64_t start_step = 0;
  std::int64_t steps = 0;
  bool finished = false;

  concurrency::Mutex mutex;
  concurrency::ConditionVariable replies_done;
  int outstanding DTRAIN_GUARDED_BY(mutex) = 0;
  std::string first_error DTRAIN_GUARDED_BY(mutex);
  // By piece, filled by the replies with `mutex` held; step() reads and clears it without, once
  // no reply is outstanding: not DTRAIN_GUARDED_BY, which cannot say that.
  std::vector<std::string> fresh_values;

  double learning_rate() const { return optimizer->param_groups().front().options().get_lr(); }

  void push(std::size_t index) {
    Slot& slot = slots[index];
    at::Tensor& grad = slot.parameter.mutable_grad();
    if (!grad.defined()) grad = at::zeros_like(slot.parameter);  // no gradient here: push zeros
    const at::Tensor wire = grad.is_contiguous() && grad.is_cpu() ? grad : grad.to(at::kCPU).contiguous();
    const float* data = wire.data_ptr<float>();
    const double lr = learning_rate();
    for (int piece : client->plan().pieces_of_parameter(static_cast<int>(index))) {
      {
        concurrency::MutexLock lock(mutex);
        ++outstanding;
      }
      const ps::Piece& p = client->plan().pieces()[static_cast<std::size_t>(piece)];
      // The request copies the bytes before push() returns: `wire` may go after this.
      client->push(piece, start_step + steps, lr, data + p.offset,
                   [this, piece](const std::string& error, std::string&& value) {
                     concurrency::MutexLock lock(mutex);
                     if (!error.empty() && first_error.empty()) first_error = error;
                     if (error.empty()) fresh_values[static_cast<std::size_t>(piece)] = std::move(value);
                     if (--outstanding == 0) replies_done.notify_all();
                   });
    }
    slot.pushed = true;
  }

  void on_gradient_ready(std::size_t index) {
    if (slots[index].pushed) {
      throw Error("dtrain::PSOptimizer: gradient of '" + slots[index].name +
                  "' computed twice before step(); call step() after each backward pass");
    }
    push(index);
  }

  void wait_for_replies() {
    concurrency::MutexLock lock(mutex);
    // The predicate runs with the mutex held (the wait takes it back first).
    replies_done.wait(lock, [this]() DTRAIN_REQUIRES(mutex) { return outstanding == 0; });
  }

  // Copies `values` (bytes by piece) into the parameters.
  void install(const std::vector<std::string>& values) {
    torch::NoGradGuard no_grad;
    const auto& pieces = client->plan().pieces();
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (values[i].empty()) continue;
      at::Tensor& parameter = slots[static_cast<std::size_t>(pieces[i].parameter)].parameter;
      std::memcpy(parameter.data_ptr<float>() + pieces[i].offset, values[i].data(), values[i].size());
    }
  }
};

PSOptimizer::PSOptimizer(torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                         std::int64_t start_step, PSOptimizerOptions options)
    : optimizer_(optimizer), impl_(std::make_unique<Impl>()) {
  impl_->optimizer = &optimizer;
  const ps::UpdateRuleSpec rule = rule_of(optimizer);
  std::unordered_set<std::string> names;
  std::vector<ps::ParameterSize> sizes;
  for (const auto& [name, parameter] : named_parameters) {
    if (!names.insert(name).second) {
      throw Error("dtrain::PSOptimizer: parameter name '" + name + "' appears twice; names must be unique");
    }
    if (!parameter.requires_grad()) continue;
    if (parameter.scalar_type() != at::kFloat || !parameter.is_cpu() || !parameter.is_contiguous()) {
      throw Error("dtrain::PSOptimizer: parameter '" + name +
                  "' is not a contiguous float32 CPU tensor; parameter "
                  "servers hold float32");
    }
    Impl::Slot slot;
    slot.name = name;
    slot.parameter = parameter;
    impl_->slots.push_back(std::move(slot));
    sizes.push_back({name, parameter.numel()});
  }
  try {
    ps::PsClientOptions options = ps::ps_client_options_from_environment();
    ps::ShardPlan plan(sizes, static_cast<int>(options.servers.size()));
    impl_->client = std::make_unique<ps::PsClient>(std::move(options), std::move(plan));
    auto initial = [this](const ps::Piece& piece) {
      return impl_->slots[static_cast<std::size_t>(piece.parameter)].parameter.data_ptr<float>() + piece.offset;
    };
    const auto registration = impl_->client->register_worker(rule, initial, start_step);
    impl_->mode = registration.mode;
    impl_->start_step = registration.start_step;
  } catch (const ps::PsError& e) {
    throw Error(std::string("dtrain::PSOptimizer: ") + e.what());
  }
  impl_->fresh_values.resize(impl_->client->plan().pieces().size());
  if (rank() != 0) pull_parameters();  // start from the chief's values
  if (!options.push_during_backward) return;

  for (std::size_t i = 0; i < impl_->slots.size(); ++i) {
    auto& slot = impl_->slots[i];
    slot.accumulator = torch::autograd::impl::grad_accumulator(slot.parameter);
    if (!slot.accumulator) throw Error("dtrain::PSOptimizer: parameter '" + slot.name + "' is not a leaf tensor");
    slot.hook_key = slot.accumulator->add_post_hook(
        std::make_unique<GradientReadyHook>([impl = impl_.get(), i] { impl->on_gradient_ready(i); }));
  }
}

PSOptimizer::~PSOptimizer() {
  for (auto& slot : impl_->slots) {
    if (slot.accumulator) slot.accumulator->del_post_hook(slot.hook_key);
  }
  impl_->wait_for_replies();  // callbacks write into impl_
}

int PSOptimizer::rank() const { return impl_->client->options().worker; }
int PSOptimizer::size() const { return impl_->client->options().num_workers; }
const std::string& PSOptimizer::mode() const { return impl_->mode; }
std::int64_t PSOptimizer::start_step() const { return impl_->start_step; }
std::int64_t PSOptimizer::steps_taken() const { return impl_->steps; }

void PSOptimizer::step() {
  for (std::size_t i = 0; i < impl_->slots.size(); ++i) {
    if (!impl_->slots[i].pushed) impl_->push(i);
  }
  impl_->wait_for_replies();
  for (auto& slot : impl_->slots) slot.pushed = false;
  std::string error;
  {
    concurrency::MutexLock lock(impl_->mutex);
    error = std::move(impl_->first_error);
    impl_->first_error.clear();
  }
  if (error.empty()) error = impl_->client->heartbeat_error();
  if (!error.empty()) throw Error(error);
  impl_->install(impl_->fresh_values);
  for (auto& value : impl_->fresh_values) value.clear();
  ++impl_->steps;
}

void PSOptimizer::zero_grad() { optimizer_.zero_grad(); }

void PSOptimizer::pull_parameters() {
  std::vector<int> all(impl_->client->plan().pieces().size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  try {
    impl_->install(impl_->client->pull(all));
  } catch (const ps::PsError& e) {
    throw Error(e.what());
  }
}

void PSOptimizer::finish(double wait_for_others_s) {
  if (impl_->finished) return;
  impl_->finished = true;
  try {
    if (rank() == 0) {
      impl_->client->wait_for_other_workers(wait_for_others_s);
      pull_parameters();
    }
    impl_->client->leave();
  } catch (const ps::PsError& e) {
    throw Error(e.what());
  }
}

}  // namespace dtrain::libtorch
