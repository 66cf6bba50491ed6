#pragma once

// Dynamic loss scaling for float16 training, with PyTorch GradScaler's rule: float16 gradients
// of small losses underflow to zero, so the loss is multiplied by a large scale before
// backward and the gradients divided by it before the step. A step whose gradients hold an
// infinity or NaN (the scale was too large) is skipped and the scale halved; after
// `growth_interval` good steps in a row it is doubled. bfloat16 has float32's range and
// needs none of this.
//
// In data-parallel training unscale() runs on the averaged gradients, so an overflow on any
// rank is seen by every rank (inf and NaN survive the average) and all skip alike.
#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace dtrain::vision::solver {

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16, PyTorch's
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  // Throws std::invalid_argument for options that cannot work (a non-positive scale,
  // growth <= 1, backoff outside (0, 1), an interval < 1).
  explicit LossScaler(LossScalerOptions options = {});

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }

  // loss x scale, in the loss's type.
  at::Tensor scale_loss(const at::Tensor& loss) const;

  // Divides each defined gradient of `parameters` by the scale in place; whether all of them
  // are finite. Reads one flag from the device (the only host sync it makes).
  bool unscale_gradients(const std::vector<at::Tensor>& parameters) const;

  // After a step's unscale_gradients: a non-finite step backs the scale off and counts as
  // skipped (the caller does not step), a finite one may grow it.
  void update(bool gradients_finite);

  // For checkpoints: the scale and the run of good steps since it last changed.
  int64_t good_steps() const { return good_steps_; }
  void restore(double scale, int64_t good_steps);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t good_steps_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace dtrain::vision::solver
