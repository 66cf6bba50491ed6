// PowerSGD (Vogels et al., 2019; PyTorch DDP's powerSGD_hook): a gradient viewed as an n x m
// matrix M travels as two thin factors instead, P = M Q (n x r) and Q = M^T P (m x r), each
// allreduced, so (n + m) r values cross the wire instead of n m. One power iteration per step:
//
//   M += error                  (error feedback: what earlier approximations left out)
//   P = M Q;   allreduce P;     orthogonalize P's columns
//   Q = M^T P; allreduce Q;     M' = P Q^T / size()     (the approximate average)
//   error = M - M';  grad = M'
//
// Q starts random (the same on every rank, from the seed and the gradient's name) and, with
// warm start, each step begins from the last step's Q, which makes one iteration per step
// converge over the steps. DistributedOptimizer starts the P allreduce from backward's hook
// and finishes in synchronize().
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

#include "dtrain/torch.h"

namespace dtrain::libtorch {

// Whether a gradient of `shape` and `bytes` is worth approximating: a matrix (or more
// dimensions, folded to dim 0 x the rest) whose factors are smaller than itself by at least
// `options.min_compression_rate`, and at least `min_bytes` large. Vectors (biases, norms)
// travel whole.
bool power_sgd_compresses(at::IntArrayRef shape, std::int64_t bytes, const PowerSgdOptions& options,
                          std::int64_t min_bytes);

// One gradient's PowerSGD state (its Q and its error) and the step in flight.
class PowerSgdGradient {
 public:
  PowerSgdGradient(std::string name, PowerSgdOptions options);

  // Adds the error to `grad` and starts the P allreduce. `grad` must stay alive and unchanged
  // until finish().
  void start(const at::Tensor& grad);
  // Waits for P, orthogonalizes it and starts the Q allreduce.
  void start_q();
  // Waits for Q and writes the approximate average into `grad`; keeps what it left out as the
  // next step's error.
  void finish();
  // Waits for what is in flight, ignoring its errors, and forgets the step.
  void abandon();
  // The bytes of P and Q: what the last step put into allreduces.
  std::int64_t factor_bytes() const { return factor_bytes_; }

 private:
  at::Tensor initial_q(std::int64_t columns, const at::TensorOptions& options) const;

  std::string name_;
  PowerSgdOptions options_;
  at::Tensor grad_;    // the gradient in flight
  at::Tensor matrix_;  // it as n x m, error added
  at::Tensor q_;       // m x r, kept from step to step with warm start
  at::Tensor p_;       // n x r
  at::Tensor error_;   // n x m
  TensorHandle handle_;
  bool in_flight_ = false;
  bool q_started_ = false;
  std::int64_t factor_bytes_ = 0;
  std::int64_t steps_ = 0;
};

}  // namespace dtrain::libtorch
