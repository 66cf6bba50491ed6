#pragma once

// SGD with momentum and weight decay by LibTorch's own rule and state (torch::optim::SGD:
// the same momentum buffers, so checkpoints and broadcast_optimizer_state are unchanged),
// stepped the fast way for where the tensors are:
// - on a GPU, with the multi-tensor (foreach) kernels that PyTorch's Python SGD uses there by
//   default: a handful of launches per parameter group instead of four per parameter (a step
//   over Mask R-CNN's ~150 trainable tensors otherwise launches ~600 small kernels);
// - on the CPU, float32 tensors one pass each (fused_sgd_kernel.h), where the foreach
//   kernels would pass over the memory eleven times, one per-tensor operation after another.
// Either way the result is the same bits as torch::optim::SGD's.
#include <torch/optim/sgd.h>

#include <string>
#include <vector>

namespace dtrain::vision::solver {

class MultiTensorSgd : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;

  at::Tensor step(LossClosure closure = nullptr) override;

 private:
  // Steps `p` with the fused CPU kernel if it is one the kernel takes; whether it did. Only
  // where aten_fuses_multiply_add().
  bool step_fused(const torch::optim::SGDOptions& options, const at::Tensor& p);
  void step_multi_tensor(const torch::optim::SGDOptions& options, const std::vector<at::Tensor>& params,
                         const std::vector<at::Tensor>& grads);
};

// Whether ATen fuses the multiply-add of `a.add(b, alpha)` in this process (its AVX2 and AVX-512
// kernels do, its baseline kernels round twice): then, and only then, the fused CPU kernel's
// std::fma gives LibTorch's bits and MultiTensorSgd uses it. Read off ATen itself, once:
// -(1 + 2^-11) + (1 + 2^-12)^2 is 2^-24 fused and 0 rounded twice, for a vector's worth of
// elements and for one.
bool aten_fuses_multiply_add();

// A parameter's key in a LibTorch optimizer's state: its TensorImpl's address.
inline void* optimizer_state_key(const at::Tensor& parameter) {
  return static_cast<void*>(parameter.unsafeGetTensorImpl());
}

}  // namespace dtrain::vision::solver
