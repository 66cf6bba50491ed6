#pragma once

// The second half of a training step, for any model: from its loss (the sum of its losses)
// to updated weights. What a model computes is its own; the way its gradients travel is the
// distribution's (a GradientPath: averaged over the ranks by allreduce, or pushed to
// parameter servers). Two steps, as Detectron2 has SimpleTrainer and AMPTrainer:
// float32_step for float32 and bfloat16 training (bfloat16 keeps float32's range), and
// float16_step, which scales the loss so that small float16 gradients do not underflow and
// skips the update whose scaled gradients overflowed (PyTorch's GradScaler).
#include <ATen/ATen.h>

#include <functional>
#include <vector>

#include "dtrain/torch.h"
#include "vision/solver/loss_scaler.h"

namespace dtrain::training {

class GradientPath {
 public:
  virtual ~GradientPath() = default;
  // Before backward: the previous step's gradients dropped.
  virtual void zero_grad() = 0;
  // After backward: the gradients as the update will use them (on every rank alike).
  virtual void wait_for_gradients() = 0;
  // The optimizer's update from them.
  virtual void apply() = 0;
};

// The usual path: DistributedOptimizer averages the gradients over the ranks as backward
// produces them, and steps the optimizer it wraps.
class AllreducePath : public GradientPath {
 public:
  explicit AllreducePath(libtorch::DistributedOptimizer& optimizer) : optimizer_(optimizer) {}
  void zero_grad() override { optimizer_.zero_grad(); }
  void wait_for_gradients() override { optimizer_.synchronize(); }
  void apply() override { optimizer_.step(); }

 private:
  libtorch::DistributedOptimizer& optimizer_;
};

// What happens to the gradients between wait_for_gradients() and apply(), such as clipping;
// empty for nothing.
using GradientEdit = std::function<void()>;

// backward, the gradients' way, `edit`, the update.
void float32_step(const at::Tensor& loss, GradientPath& path, const GradientEdit& edit = {});

// backward of loss x scale, the gradients' way, then unscaled; when all are finite, `edit`
// and the update, else none (the next zero_grad drops them). The scale backs off or grows
// either way. Returns whether the update was applied.
bool float16_step(const at::Tensor& loss, GradientPath& path, vision::solver::LossScaler& scaler,
                  const std::vector<at::Tensor>& parameters, const GradientEdit& edit = {});

}  // namespace dtrain::training
