#include "python/process_group.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>

#include "dtrain/dtrain.h"
#include "dtrain/torch.h"

namespace dtrain::python {
namespace {

// The exception PyTorch users catch for a failed collective: DistBackendError (a RuntimeError).
[[noreturn]] void throw_backend_error(const std::string& message) { C10_THROW_ERROR(DistBackendError, message); }

std::exception_ptr backend_error(const std::string& message) {
  try {
    throw_backend_error(message);
  } catch (...) {
    return std::current_exception();
  }
}

// Runs what submits an operation; what the runtime refuses on this rank (a dtype it has no
// engine for, a bad root) becomes PyTorch's error, raised to the caller.
template <typename Start>
auto start_operation(const char* what, Start&& start) {
  try {
    return start();
  } catch (const c10::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw_backend_error(std::string("dtrain backend: ") + what + ": " + e.what());
  }
}

[[noreturn]] void refuse(const char* what, const std::string& why) {
  TORCH_CHECK(false, "dtrain backend: ", what, ": ", why);
}

// c10d passes one tensor per device in a list; a process of this backend drives one device.
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* what) {
  if (tensors.size() != 1) {
    refuse(what, "takes one tensor per process, got a list of " + std::to_string(tensors.size()) +
                     " (one process per device, as with NCCL)");
  }
  return tensors[0];
}

ReduceOptions runtime_reduce_options(const c10d::ReduceOp& op, const char* what) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return {ReduceOp::kSum};
    case c10d::ReduceOp::AVG: return {ReduceOp::kAverage};
    case c10d::ReduceOp::MIN: return {ReduceOp::kMin};
    case c10d::ReduceOp::MAX: return {ReduceOp::kMax};
    case c10d::ReduceOp::PRODUCT: return {ReduceOp::kProduct};
    default:
      refuse(what, "reduce op " + std::to_string(static_cast<int>(op.op_)) +
                       " is not supported (SUM, AVG, MIN, MAX and PRODUCT are)");
  }
}

void check_root(std::int64_t root, int size, const char* what) {
  if (root < 0 || root >= size) {
    refuse(what, "root rank " + std::to_string(root) + " is not in [0, " + std::to_string(size) + ")");
  }
}

// `tensor` as one contiguous row of its elements: the runtime's allgather, reducescatter and
// alltoall split along the first dimension, c10d's along whole tensors.
at::Tensor flat(const at::Tensor& tensor) { return tensor.reshape({-1}); }

void check_same_kind(const at::Tensor& tensor, const at::Tensor& expected, const char* what, const std::string& which) {
  if (tensor.scalar_type() != expected.scalar_type() || tensor.numel() != expected.numel()) {
    refuse(what, which + " has " + std::to_string(tensor.numel()) + " elements of " +
                     std::string(c10::toString(tensor.scalar_type())) + ", the input " +
                     std::to_string(expected.numel()) + " of " + c10::toString(expected.scalar_type()));
  }
}

// Sleeps until the runtime has finished `handle`'s operation (what the completion thread waits for).
template <typename TensorHandle>
std::function<void()> runtime_done(TensorHandle handle) {
  return [handle] { handle.wait_finished(); };
}

// Copies consecutive pieces of the 1-D `source` into `targets`, each as many elements as it has.
void scatter_pieces(const at::Tensor& source, std::vector<at::Tensor>& targets) {
  std::int64_t offset = 0;
  for (at::Tensor& target : targets) {
    target.copy_(source.narrow(0, offset, target.numel()).view(target.sizes()));
    offset += target.numel();
  }
}

// An operation between its start and its future's completion. Whichever comes first finishes
// it: a thread blocked in Work::wait() on it (the blocking dist.all_reduce, whose result then
// arrives without a hand-over between threads), or the group's completion thread, once the
// operation is handed to it (someone asked for its future, polled it, or dropped its Work).
class PendingOperation {
 public:
  using Finish = std::function<std::vector<at::Tensor>()>;

  PendingOperation(std::function<void()> await_runtime, Finish finish, c10::intrusive_ptr<c10::ivalue::Future> future)
      : await_runtime_(std::move(await_runtime)), finish_(std::move(finish)), future_(std::move(future)) {}

  // The completion thread's turn: it sleeps until the runtime has finished the operation (the
  // background thread drives it), then finishes it unless a waiting thread did.
  void finish_in_turn() {
    await_runtime_();
    finish_once();
  }

  // Runs the finish and completes the future, unless another thread has claimed that already.
  void finish_once() {
    if (claimed_.exchange(true)) return;
    std::vector<at::Tensor> results;
    try {
      results = finish_();
    } catch (const std::exception& e) {
      const std::string message = e.what();
      future_->setError(message.rfind("dtrain", 0) == 0 ? backend_error(message)
                                                        : backend_error("dtrain backend: " + message));
      finish_ = nullptr;
      return;
    }
    finish_ = nullptr;  // lets go of the operation's tensors
    future_->markCompleted(c10::IValue(results));
  }

  bool claimed() const { return claimed_; }
  const c10::intrusive_ptr<c10::ivalue::Future>& future() const { return future_; }

 private:
  std::atomic<bool> claimed_{false};
  std::function<void()> await_runtime_;
  Finish finish_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

// A c10d Work over a PendingOperation. wait() rethrows the operation's error, as the Gloo and
// NCCL backends' do.
class DtrainWork final : public c10d::Work {
 public:
  DtrainWork(int rank, c10d::OpType type, std::shared_ptr<PendingOperation> operation,
             std::shared_ptr<CompletionThread> completions)
      : c10d::Work(rank, type),
        operation_(std::move(operation)),
        future_(operation_->future()),
        completions_(std::move(completions)) {}
  // An operation nobody waited for is still finished (its results copied where they belong).
  ~DtrainWork() override { hand_over(); }

  bool isCompleted() override {
    hand_over();
    return future_->completed();
  }
  bool isSuccess() const override { return future_->completed() && !future_->hasError(); }
  std::exception_ptr exception() const override { return future_->completed() ? future_->exception_ptr() : nullptr; }
  std::vector<at::Tensor> result() override {
    wait(kNoTimeout);
    return future_->value().toTensorVector();
  }
  bool wait(std::chrono::milliseconds timeout) override {
    if (timeout == kNoTimeout) {
      operation_->finish_once();
      future_->wait();
    } else {
      // The runtime fails an operation whose peers stall past the group's timeout; this is the
      // caller's own, shorter bound on this wait.
      hand_over();
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      while (!future_->completed()) {
        if (std::chrono::steady_clock::now() >= deadline) {
          throw_backend_error("dtrain backend: the operation did not finish within " + std::to_string(timeout.count()) +
                              " ms");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      future_->wait();
    }
    if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
    return true;
  }
  void synchronize() override {}
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    hand_over();
    return future_;
  }

 private:
  // Queues the operation on the completion thread (once, and only if no thread finished it).
  void hand_over() {
    if (operation_->claimed() || handed_over_.exchange(true)) return;
    completions_->enqueue([operation = operation_] { operation->finish_in_turn(); });
  }

  std::shared_ptr<PendingOperation> operation_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<CompletionThread> completions_;
  std::atomic<bool> handed_over_{false};
};

}  // namespace

DtrainProcessGroup::DtrainProcessGroup(int rank, int size, std::string group_id, ProcessSet set)
    : c10d::Backend(rank, size),
      group_id_(std::move(group_id)),
      set_(std::move(set)),
      members_(set_.is_global() ? std::vector<int>{} : set_.ranks()),
      completions_(std::make_shared<CompletionThread>()) {}

// A group over part of the world ends its process set with it (destroy_process_group); after
// dtrain's shutdown the set has ended already.
DtrainProcessGroup::~DtrainProcessGroup() {
  if (set_.is_global()) return;
  try {
    remove_process_set(set_);
  } catch (const std::exception&) {}
}

int DtrainProcessGroup::job_rank(std::int64_t group_rank) const {
  return members_.empty() ? static_cast<int>(group_rank) : members_.at(static_cast<std::size_t>(group_rank));
}

std::string DtrainProcessGroup::next_name() { return "torch.group" + group_id_ + "." + std::to_string(calls_++); }

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::finish_later(c10d::OpType type,
                                                                const std::vector<at::Tensor>& outputs,
                                                                std::function<void()> await_runtime, Finish finish) {
  // A future over CUDA tensors records, when completed, an event on the completing thread's
  // current streams, which its waiters and callbacks then wait for.
  std::vector<c10::Device> devices;
  for (const at::Tensor& tensor : outputs) {
    if (tensor.is_cuda() && std::find(devices.begin(), devices.end(), tensor.device()) == devices.end()) {
      devices.push_back(tensor.device());
    }
  }
  static const c10::TypePtr tensor_list = c10::ListType::create(c10::TensorType::get());  // made once, not per call
  auto future = c10::make_intrusive<c10::ivalue::Future>(tensor_list, devices);
  auto operation = std::make_shared<PendingOperation>(std::move(await_runtime), std::move(finish), std::move(future));
  return c10::make_intrusive<DtrainWork>(getRank(), type, std::move(operation), completions_);
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& options) {
  const std::string name = next_name();
  at::Tensor tensor = single(tensors, "allreduce");
  const ReduceOptions reduce = runtime_reduce_options(options.reduceOp, "allreduce");
  auto handle = start_operation("allreduce", [&] { return libtorch::allreduce_async_(tensor, name, reduce, set_); });
  return finish_later(c10d::OpType::ALLREDUCE, {tensor}, runtime_done(handle), [handle, tensor]() mutable {
    handle.wait();
    return std::vector<at::Tensor>{tensor};
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                       const c10d::AllreduceCoalescedOptions& options) {
  const std::string name = next_name();
  if (tensors.empty()) refuse("allreduce_coalesced", "no tensors");
  const ReduceOptions reduce = runtime_reduce_options(options.reduceOp, "allreduce_coalesced");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < tensors.size(); ++i) names.push_back(name + "." + std::to_string(i));
  auto handle = start_operation("allreduce_coalesced",
                                [&] { return libtorch::grouped_allreduce_async_(tensors, names, reduce, set_); });
  return finish_later(c10d::OpType::ALLREDUCE_COALESCED, tensors, runtime_done(handle), [handle, tensors]() mutable {
    handle.wait();
    return tensors;
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& options) {
  const std::string name = next_name();
  at::Tensor tensor = single(tensors, "broadcast");
  check_root(options.rootRank, getSize(), "broadcast");
  const int root = job_rank(options.rootRank);
  auto handle = start_operation("broadcast", [&] { return libtorch::broadcast_async_(tensor, root, name, set_); });
  return finish_later(c10d::OpType::BROADCAST, {tensor}, runtime_done(handle), [handle, tensor]() mutable {
    handle.wait();
    return std::vector<at::Tensor>{tensor};
  });
}

// Every rank reduces (the runtime has no rooted reduction); only the root keeps the result, the
// others' tensors stay as they were.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& options) {
  const std::string name = next_name();
  at::Tensor tensor = single(tensors, "reduce");
  check_root(options.rootRank, getSize(), "reduce");
  const ReduceOptions reduce = runtime_reduce_options(options.reduceOp, "reduce");
  const bool root = options.rootRank == getRank();
  auto handle = start_operation("reduce", [&] { return libtorch::allreduce_async(tensor, name, reduce, set_); });
  return finish_later(c10d::OpType::REDUCE, {tensor}, runtime_done(handle), [handle, tensor, root]() mutable {
    at::Tensor result = handle.wait();
    if (root) tensor.copy_(result);
    return std::vector<at::Tensor>{tensor};
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions&) {
  const std::string name = next_name();
  const at::Tensor input = single(inputs, "allgather");
  if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize()) {
    refuse("allgather", "needs one output list of " + std::to_string(getSize()) + " tensors");
  }
  for (std::size_t r = 0; r < outputs[0].size(); ++r) {
    check_same_kind(outputs[0][r], input, "allgather", "output " + std::to_string(r));
  }
  auto handle = start_operation("allgather", [&] { return libtorch::allgather_async(flat(input), name, set_); });
  std::vector<at::Tensor> targets = outputs[0];
  return finish_later(c10d::OpType::ALLGATHER, targets, runtime_done(handle), [handle, targets]() mutable {
    scatter_pieces(handle.wait(), targets);
    return targets;
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  const std::string name = next_name();
  if (output.scalar_type() != input.scalar_type() || output.numel() != input.numel() * getSize()) {
    refuse("_allgather_base", "the output must hold size (" + std::to_string(getSize()) + ") times the input's " +
                                  std::to_string(input.numel()) + " elements of " + c10::toString(input.scalar_type()) +
                                  ", it holds " + std::to_string(output.numel()) + " of " +
                                  c10::toString(output.scalar_type()));
  }
  auto handle = start_operation("_allgather_base", [&] { return libtorch::allgather_async(flat(input), name, set_); });
  return finish_later(c10d::OpType::_ALLGATHER_BASE, {output}, runtime_done(handle), [handle, output]() mutable {
    output.copy_(handle.wait().view(output.sizes()));
    return std::vector<at::Tensor>{output};
  });
}

// An allgather whose result only the root keeps.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::GatherOptions& options) {
  const std::string name = next_name();
  const at::Tensor input = single(inputs, "gather");
  check_root(options.rootRank, getSize(), "gather");
  const bool root = options.rootRank == getRank();
  std::vector<at::Tensor> targets;
  if (root) {
    if (outputs.size() != 1 || static_cast<int>(outputs[0].size()) != getSize()) {
      refuse("gather", "the root needs one output list of " + std::to_string(getSize()) + " tensors");
    }
    targets = outputs[0];
    for (std::size_t r = 0; r < targets.size(); ++r) {
      check_same_kind(targets[r], input, "gather", "output " + std::to_string(r));
    }
  } else if (!outputs.empty()) {
    refuse("gather", "only the root rank takes output tensors");
  }
  auto handle = start_operation("gather", [&] { return libtorch::allgather_async(flat(input), name, set_); });
  return finish_later(c10d::OpType::GATHER, targets, runtime_done(handle), [handle, targets]() mutable {
    at::Tensor gathered = handle.wait();
    if (!targets.empty()) scatter_pieces(gathered, targets);
    return targets;
  });
}

// The root broadcasts every rank's piece; each keeps its own.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ScatterOptions& options) {
  const std::string name = next_name();
  at::Tensor output = single(outputs, "scatter");
  check_root(options.rootRank, getSize(), "scatter");
  const bool root = options.rootRank == getRank();
  at::Tensor all;
  if (root) {
    if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
      refuse("scatter", "the root needs one input list of " + std::to_string(getSize()) + " tensors");
    }
    std::vector<at::Tensor> pieces;
    for (std::size_t r = 0; r < inputs[0].size(); ++r) {
      check_same_kind(inputs[0][r], output, "scatter", "input " + std::to_string(r));
      pieces.push_back(flat(inputs[0][r]));
    }
    all = at::cat(pieces);
  } else {
    if (!inputs.empty()) refuse("scatter", "only the root rank takes input tensors");
    all = at::empty({output.numel() * getSize()}, output.options());
  }
  const int root_rank = job_rank(options.rootRank);
  auto handle = start_operation("scatter", [&] { return libtorch::broadcast_async_(all, root_rank, name, set_); });
  const std::int64_t offset = output.numel() * getRank();
  return finish_later(c10d::OpType::SCATTER, {output}, runtime_done(handle), [handle, all, output, offset]() mutable {
    handle.wait();
    output.copy_(all.narrow(0, offset, output.numel()).view(output.sizes()));
    return std::vector<at::Tensor>{output};
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                                  const c10d::ReduceScatterOptions& options) {
  const std::string name = next_name();
  at::Tensor output = single(outputs, "reduce_scatter");
  if (inputs.size() != 1 || static_cast<int>(inputs[0].size()) != getSize()) {
    refuse("reduce_scatter", "needs one input list of " + std::to_string(getSize()) + " tensors");
  }
  std::vector<at::Tensor> pieces;
  for (std::size_t r = 0; r < inputs[0].size(); ++r) {
    check_same_kind(inputs[0][r], output, "reduce_scatter", "input " + std::to_string(r));
    pieces.push_back(flat(inputs[0][r]));
  }
  const ReduceOptions reduce = runtime_reduce_options(options.reduceOp, "reduce_scatter");
  const at::Tensor all = at::cat(pieces);
  auto handle =
      start_operation("reduce_scatter", [&] { return libtorch::reducescatter_async(all, name, reduce, set_); });
  return finish_later(c10d::OpType::REDUCE_SCATTER, {output}, runtime_done(handle), [handle, output]() mutable {
    output.copy_(handle.wait().view(output.sizes()));
    return std::vector<at::Tensor>{output};
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                        const c10d::ReduceScatterOptions& options) {
  const std::string name = next_name();
  if (output.scalar_type() != input.scalar_type() || input.numel() != output.numel() * getSize()) {
    refuse("_reduce_scatter_base", "the input must hold size (" + std::to_string(getSize()) + ") times the output's " +
                                       std::to_string(output.numel()) + " elements of " +
                                       c10::toString(output.scalar_type()) + ", it holds " +
                                       std::to_string(input.numel()) + " of " + c10::toString(input.scalar_type()));
  }
  const ReduceOptions reduce = runtime_reduce_options(options.reduceOp, "_reduce_scatter_base");
  auto handle = start_operation("_reduce_scatter_base",
                                [&] { return libtorch::reducescatter_async(flat(input), name, reduce, set_); });
  return finish_later(c10d::OpType::_REDUCE_SCATTER_BASE, {output}, runtime_done(handle), [handle, output]() mutable {
    output.copy_(handle.wait().view(output.sizes()));
    return std::vector<at::Tensor>{output};
  });
}

// Rows of the first dimension go to each rank: `input_splits` of them (equal parts when empty),
// and `output_splits` are expected from each.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                 std::vector<int64_t>& output_splits,
                                                                 std::vector<int64_t>& input_splits,
                                                                 const c10d::AllToAllOptions&) {
  const std::string name = next_name();
  const auto check_splits = [&](const std::vector<int64_t>& splits, const at::Tensor& tensor, const char* which) {
    if (splits.empty()) {
      if (tensor.dim() == 0 || tensor.size(0) % getSize() != 0) {
        refuse("alltoall_base", std::string("without ") + which + " splits the " + which +
                                    "'s first dimension must divide into " + std::to_string(getSize()) +
                                    " equal parts");
      }
      return;
    }
    std::int64_t rows = 0;
    for (std::int64_t s : splits) rows += s;
    if (static_cast<int>(splits.size()) != getSize() || tensor.dim() == 0 || rows != tensor.size(0)) {
      refuse("alltoall_base", std::string(which) + " splits must be " + std::to_string(getSize()) +
                                  " row counts summing to the " + which + "'s first dimension");
    }
  };
  check_splits(input_splits, input, "input");
  check_splits(output_splits, output, "output");
  if (output.scalar_type() != input.scalar_type()) refuse("alltoall_base", "the output's dtype is not the input's");
  const std::vector<std::int64_t> expected = output_splits;
  auto handle = start_operation("alltoall_base", [&] {
    return libtorch::alltoall_async(input.contiguous(), name,
                                    std::vector<std::int64_t>(input_splits.begin(), input_splits.end()), set_);
  });
  return finish_later(
      c10d::OpType::ALLTOALL_BASE, {output}, runtime_done(handle), [handle, output, expected]() mutable {
        at::Tensor received = handle.wait();
        const std::vector<std::int64_t> rows = handle.received_splits();
        if ((!expected.empty() && rows != expected) || received.numel() != output.numel()) {
          throw Error("dtrain backend: alltoall_base: the rows received from each rank do not match the output splits");
        }
        output.copy_(received.view(output.sizes()));
        return std::vector<at::Tensor>{output};
      });
}

// Whole tensors to each rank: their elements travel as rows of one flat tensor.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions&) {
  const std::string name = next_name();
  if (static_cast<int>(inputs.size()) != getSize() || static_cast<int>(outputs.size()) != getSize()) {
    refuse("alltoall", "needs " + std::to_string(getSize()) + " input and output tensors");
  }
  std::vector<at::Tensor> pieces;
  std::vector<std::int64_t> splits;
  for (std::size_t r = 0; r < inputs.size(); ++r) {
    if (inputs[r].scalar_type() != inputs[0].scalar_type() || outputs[r].scalar_type() != inputs[0].scalar_type()) {
      refuse("alltoall", "every input and output tensor must have one dtype");
    }
    pieces.push_back(flat(inputs[r]));
    splits.push_back(inputs[r].numel());
  }
  const at::Tensor all = at::cat(pieces);
  auto handle = start_operation("alltoall", [&] { return libtorch::alltoall_async(all, name, splits, set_); });
  std::vector<at::Tensor> targets = outputs;
  return finish_later(c10d::OpType::ALLTOALL, targets, runtime_done(handle), [handle, targets]() mutable {
    at::Tensor received = handle.wait();
    const std::vector<std::int64_t> rows = handle.received_splits();
    for (std::size_t r = 0; r < targets.size(); ++r) {
      if (rows.at(r) != targets[r].numel()) {
        throw Error("dtrain backend: alltoall: rank " + std::to_string(r) + " sent " + std::to_string(rows[r]) +
                    " elements for an output of " + std::to_string(targets[r].numel()));
      }
    }
    scatter_pieces(received, targets);
    return targets;
  });
}

// An allreduce of one element: it finishes once every rank has reached it.
c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::barrier(const c10d::BarrierOptions&) {
  const std::string name = next_name();
  at::Tensor token = at::zeros({1}, at::kInt);
  auto handle =
      start_operation("barrier", [&] { return libtorch::allreduce_async_(token, name, {ReduceOp::kSum}, set_); });
  return finish_later(c10d::OpType::BARRIER, {}, runtime_done(handle), [handle]() mutable {
    handle.wait();
    return std::vector<at::Tensor>{};
  });
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::send(std::vector<at::Tensor>&, int, int) {
  refuse("send", "point-to-point operations are not supported; use collectives (or a gloo group for send/recv)");
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::recv(std::vector<at::Tensor>&, int, int) {
  refuse("recv", "point-to-point operations are not supported; use collectives (or a gloo group for send/recv)");
}

c10::intrusive_ptr<c10d::Work> DtrainProcessGroup::recvAnysource(std::vector<at::Tensor>&, int) {
  refuse("recv", "point-to-point operations are not supported; use collectives (or a gloo group for send/recv)");
}

}  // namespace dtrain::python
