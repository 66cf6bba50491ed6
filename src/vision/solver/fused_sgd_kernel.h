#pragma once

// SGD's whole update of one float32 tensor in one pass over its memory: weight decay, momentum
// and the step, each element read and written once. The per-tensor operations it replaces
// (torch::optim::SGD's add, mul_, add_, add_) pass over the parameter, gradient and buffer
// eleven times and allocate a tensor the size of the gradient. Every operation rounds as the
// LibTorch operation it stands for rounds (`a.add(b, alpha)` is one fused multiply-add), so
// the result is the same bits.
#include <cstdint>

namespace dtrain::vision::solver {

// The options as the LibTorch operations see them: each rounded once from double to float.
struct SgdCoefficients {
  float lr = 0;
  float momentum = 0;
  float kept = 1;  // 1 - dampening, computed in double (LibTorch's alpha of the buffer's add_)
  float weight_decay = 0;
  bool nesterov = false;
};

// parameter[i] -= lr * direction for i < count, where direction is the gradient plus the
// weight decay's share of the parameter, folded into the momentum buffer when there is one
// (`buffer` null: SGD without momentum). `first_step`: the buffer starts at the direction
// (LibTorch's first step clones it). Parameter, gradient and buffer must not overlap.
void fused_sgd_step(float* parameter, const float* gradient, float* buffer, int64_t count,
                    const SgdCoefficients& coefficients, bool first_step);

}  // namespace dtrain::vision::solver
