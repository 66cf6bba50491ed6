// allreduce_with_gradient: y = sum over ranks of x, with dL/dx = sum over ranks of dL/dy.
// Each rank's loss depends on every rank's input through y, and the training objective is
// the sum (or average, applied later by the optimizer) of the ranks' losses, so the gradient
// reaching one rank's x is the sum of all ranks' gradients at y.
#include <torch/autograd.h>

#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

class AllreduceSum : public torch::autograd::Function<AllreduceSum> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& tensor,
                            const std::string& name) {
    context->saved_data["name"] = name;
    return allreduce(tensor.contiguous(), name + ".forward", {ReduceOp::kSum});
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* context,
                                               torch::autograd::tensor_list gradients) {
    const std::string name = context->saved_data["name"].toStringRef();
    return {allreduce(gradients[0].contiguous(), name + ".backward", {ReduceOp::kSum}), at::Tensor()};
  }
};

}  // namespace

at::Tensor allreduce_with_gradient(const at::Tensor& tensor, const std::string& name) {
  return AllreduceSum::apply(tensor, name);
}

}  // namespace dtrain::libtorch
