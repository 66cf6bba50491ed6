#pragma once

// Batch normalisation for the ResNet backbone, in the two forms torchvision
// uses: frozen (FrozenBatchNorm2d: statistics and affine are fixed buffers,
// the form detection fine-tuning uses because per-GPU batches of 2 images
// give useless statistics) and ordinary BatchNorm2d. One module with the
// same state names either way (weight, bias, running_mean, running_var), so
// a checkpoint loads into both. The frozen form computes
// x * scale + shift with scale = weight / sqrt(running_var + eps) and
// shift = bias - mean * scale, in torchvision's order of operations: folding
// it into the preceding convolution was measured to gain nothing on the CPU
// (0.5% of a training step) and would cost bit-identical features.
//
// Synchronized (Detectron2's "SyncBN"): in training, the ordinary form can
// take its batch statistics over every rank's images instead of this rank's
// alone, through a cross-rank sum the caller provides (the trainer passes
// dtrain's differentiable allreduce); data-parallel training then normalises
// exactly as one process with the whole batch would. Without that sum it is
// ordinary BatchNorm.
#include <torch/torch.h>

#include <functional>

namespace dtrain::vision::modeling {

class BatchNormImpl : public torch::nn::Module {
 public:
  static constexpr double kEps = 1e-5;  // torchvision's FrozenBatchNorm2d and BatchNorm2d default

  BatchNormImpl(int64_t channels, bool frozen);

  at::Tensor forward(const at::Tensor& x);

  bool frozen() const { return frozen_; }

  // A differentiable sum over the ranks of a 1-D tensor (its backward sums the gradients over
  // the ranks too). Given one, training takes batch statistics over all ranks' batches.
  using CrossRankSum = std::function<at::Tensor(const at::Tensor&)>;
  void synchronize_statistics(CrossRankSum sum);

 private:
  at::Tensor synchronized_forward(const at::Tensor& x);

  bool frozen_;
  CrossRankSum cross_rank_sum_;
  at::Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
};
TORCH_MODULE(BatchNorm);

}  // namespace dtrain::vision::modeling
