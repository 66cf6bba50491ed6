// Collectives as autograd functions. The objective they differentiate is the sum of every
// rank's loss: a rank's input reaches other ranks' losses through the collective, so the
// gradient it receives collects what each of those losses contributed. That is the objective
// whose gradient DistributedOptimizer's Average then divides by size(), so a model that
// computes across ranks trains like the same model run in one process on the whole batch.
//
// Each backward is the collective's adjoint:
//   allreduce      y = Σ x_r          dx = Σ_r dy_r          (Average: both divided by size)
//   allgather      y = [x_0; x_1; ..]  dx = (Σ_r dy_r)[my rows]
//   broadcast      y = x_root          dx = Σ_r dy_r on the root, zeros elsewhere
//   alltoall       rows to rank j      dx = the gradients of those rows, sent back by j
//   reducescatter  y = (Σ x_r)[mine]   dx = [dy_0; dy_1; ..]  (Average: divided by size)
#include <torch/autograd.h>

#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

std::string backward_name(AutogradContext* context) { return context->saved_data["name"].toStringRef() + ".backward"; }

ReduceOp saved_op(AutogradContext* context) { return static_cast<ReduceOp>(context->saved_data["op"].toInt()); }

void require_sum_or_average(ReduceOp op, const char* function) {
  if (op != ReduceOp::kSum && op != ReduceOp::kAverage) {
    throw Error(std::string("dtrain::") + function + ": op must be Sum or Average (the gradient of " + to_string(op) +
                " over ranks is not a collective of the same kind)");
  }
}

class AllreduceFunction : public torch::autograd::Function<AllreduceFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& tensor, const std::string& name, ReduceOp op) {
    context->saved_data["name"] = name;
    context->saved_data["op"] = static_cast<std::int64_t>(op);
    return allreduce(tensor, name + ".forward", {op});
  }

  static tensor_list backward(AutogradContext* context, tensor_list gradients) {
    return {allreduce(gradients[0], backward_name(context), {saved_op(context)}), at::Tensor(), at::Tensor()};
  }
};

class AllgatherFunction : public torch::autograd::Function<AllgatherFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& tensor, const std::string& name) {
    TensorHandle handle = allgather_async(tensor, name + ".forward");
    at::Tensor gathered = handle.wait();
    const std::vector<std::int64_t> rows = handle.received_splits();
    std::int64_t offset = 0;
    for (int r = 0; r < rank(); ++r) offset += rows[r];
    context->saved_data["name"] = name;
    context->saved_data["offset"] = offset;
    context->saved_data["rows"] = rows[rank()];
    return gathered;
  }

  static tensor_list backward(AutogradContext* context, tensor_list gradients) {
    const at::Tensor summed = allreduce(gradients[0], backward_name(context), {ReduceOp::kSum});
    return {summed.narrow(0, context->saved_data["offset"].toInt(), context->saved_data["rows"].toInt()), at::Tensor()};
  }
};

class BroadcastFunction : public torch::autograd::Function<BroadcastFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& tensor, int root, const std::string& name) {
    context->saved_data["name"] = name;
    context->saved_data["root"] = static_cast<std::int64_t>(root);
    return broadcast(tensor, root, name + ".forward");
  }

  static tensor_list backward(AutogradContext* context, tensor_list gradients) {
    at::Tensor summed = allreduce(gradients[0], backward_name(context), {ReduceOp::kSum});
    if (rank() != context->saved_data["root"].toInt()) summed.zero_();  // the output never read this rank's input
    return {summed, at::Tensor(), at::Tensor()};
  }
};

class AlltoallFunction : public torch::autograd::Function<AlltoallFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& tensor, const std::string& name,
                            std::vector<std::int64_t> splits, std::vector<std::int64_t>* received_splits) {
    auto [received, received_splits_here] = alltoall(tensor, name + ".forward", std::move(splits));
    context->saved_data["name"] = name;
    context->saved_data["received_splits"] = received_splits_here;
    *received_splits = std::move(received_splits_here);
    return received;
  }

  static tensor_list backward(AutogradContext* context, tensor_list gradients) {
    // Each row's gradient goes back to the rank the row came from, which lays them out in
    // the order it sent them.
    const std::vector<std::int64_t> splits = context->saved_data["received_splits"].toIntVector();
    return {alltoall(gradients[0], backward_name(context), splits).first, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class ReducescatterFunction : public torch::autograd::Function<ReducescatterFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& tensor, const std::string& name, ReduceOp op) {
    context->saved_data["name"] = name;
    context->saved_data["op"] = static_cast<std::int64_t>(op);
    return reducescatter(tensor, name + ".forward", {op});
  }

  static tensor_list backward(AutogradContext* context, tensor_list gradients) {
    at::Tensor gathered = allgather(gradients[0], backward_name(context));
    if (saved_op(context) == ReduceOp::kAverage) gathered.div_(size());
    return {gathered, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor allreduce_with_gradient(const at::Tensor& tensor, const std::string& name, ReduceOp op) {
  require_sum_or_average(op, "allreduce_with_gradient");
  return AllreduceFunction::apply(tensor, name, op);
}

at::Tensor allgather_with_gradient(const at::Tensor& tensor, const std::string& name) {
  return AllgatherFunction::apply(tensor, name);
}

at::Tensor broadcast_with_gradient(const at::Tensor& tensor, int root, const std::string& name) {
  return BroadcastFunction::apply(tensor, root, name);
}

std::pair<at::Tensor, std::vector<std::int64_t>> alltoall_with_gradient(const at::Tensor& tensor,
                                                                        const std::string& name,
                                                                        std::vector<std::int64_t> splits) {
  std::vector<std::int64_t> received_splits;
  at::Tensor received = AlltoallFunction::apply(tensor, name, std::move(splits), &received_splits);
  return {received, received_splits};
}

at::Tensor reducescatter_with_gradient(const at::Tensor& tensor, const std::string& name, ReduceOp op) {
  require_sum_or_average(op, "reducescatter_with_gradient");
  return ReducescatterFunction::apply(tensor, name, op);
}

}  // namespace dtrain::libtorch
