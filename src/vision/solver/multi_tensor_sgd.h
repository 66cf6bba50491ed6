#pragma once

// SGD with momentum and weight decay by LibTorch's own rule and state (torch::optim::SGD:
// the same momentum buffers, so checkpoints and broadcast_optimizer_state are unchanged),
// stepped with the multi-tensor (foreach) kernels that PyTorch's Python SGD uses on GPUs by
// default: a handful of launches per parameter group instead of four per parameter. On a GPU
// a step over Mask R-CNN's ~150 trainable tensors otherwise launches ~600 small kernels. On
// the CPU the foreach kernels loop over the tensors with the per-tensor ones, so the result
// is the same bits as torch::optim::SGD's.
#include <torch/optim/sgd.h>
#include <torch/version.h>

#include <string>

namespace dtrain::vision::solver {

class MultiTensorSgd : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;

  at::Tensor step(LossClosure closure = nullptr) override;
};

// A parameter's key in a LibTorch optimizer's state: its TensorImpl's address, as text before
// LibTorch 2.0 and the pointer itself since.
#if TORCH_VERSION_MAJOR >= 2
inline void* optimizer_state_key(const at::Tensor& parameter) {
  return static_cast<void*>(parameter.unsafeGetTensorImpl());
}
#else
inline std::string optimizer_state_key(const at::Tensor& parameter) {
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}
#endif

}  // namespace dtrain::vision::solver
