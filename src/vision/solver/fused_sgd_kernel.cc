#include "vision/solver/fused_sgd_kernel.h"

#include <cmath>

#include "vectorize/vectorized_loop.h"

namespace dtrain::vision::solver {
namespace {

// What the gradient asks of a parameter: the gradient plus the weight decay's share (LibTorch
// adds no share, not a zero one, when the decay is 0: that keeps the sign of a zero gradient).
inline float direction_of(float parameter, float gradient, float weight_decay) {
  return weight_decay != 0 ? std::fma(parameter, weight_decay, gradient) : gradient;
}

DTRAIN_VECTORIZED_LOOP
void step_without_momentum(float* __restrict parameter, const float* __restrict gradient, int64_t count, float lr,
                           float weight_decay) {
  for (int64_t i = 0; i < count; ++i) {
    parameter[i] = std::fma(direction_of(parameter[i], gradient[i], weight_decay), -lr, parameter[i]);
  }
}

// The buffer's first step holds the direction itself; later ones decay it and add the
// direction (LibTorch's mul_ then add_, each rounded).
DTRAIN_VECTORIZED_LOOP
void step_with_momentum(float* __restrict parameter, const float* __restrict gradient, float* __restrict buffer,
                        int64_t count, SgdCoefficients c, bool first_step) {
  // A float, not the bool: GCC vectorizes a select on a float comparison, not on a bool.
  const float nesterov_momentum = c.nesterov ? c.momentum : 0;
  // Two loops, so that the first step never reads the buffer it is starting.
  if (first_step) {
    for (int64_t i = 0; i < count; ++i) {
      const float direction = direction_of(parameter[i], gradient[i], c.weight_decay);
      buffer[i] = direction;
      const float update = nesterov_momentum != 0 ? std::fma(direction, nesterov_momentum, direction) : direction;
      parameter[i] = std::fma(update, -c.lr, parameter[i]);
    }
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    const float direction = direction_of(parameter[i], gradient[i], c.weight_decay);
    const float velocity = std::fma(direction, c.kept, buffer[i] * c.momentum);
    buffer[i] = velocity;
    const float update = nesterov_momentum != 0 ? std::fma(velocity, nesterov_momentum, direction) : velocity;
    parameter[i] = std::fma(update, -c.lr, parameter[i]);
  }
}

}  // namespace

void fused_sgd_step(float* parameter, const float* gradient, float* buffer, int64_t count,
                    const SgdCoefficients& coefficients, bool first_step) {
  if (buffer == nullptr) {
    step_without_momentum(parameter, gradient, count, coefficients.lr, coefficients.weight_decay);
  } else {
    step_with_momentum(parameter, gradient, buffer, count, coefficients, first_step);
  }
}

}  // namespace dtrain::vision::solver
