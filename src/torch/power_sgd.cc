#include "torch/power_sgd.h"

#include <ATen/ops/linalg_qr.h>

#include <algorithm>
#include <functional>

namespace dtrain::libtorch {
namespace {

// An orthonormal basis of P's columns. Householder QR keeps them orthonormal even where the
// ranks' gradients span fewer dimensions than P has columns, where Gram-Schmidt would turn
// rounding noise into large, skewed columns (and the approximation with them).
at::Tensor orthonormal_columns(const at::Tensor& p) { return std::get<0>(at::linalg_qr(p, "reduced")).contiguous(); }

}  // namespace

bool power_sgd_compresses(at::IntArrayRef shape, std::int64_t bytes, const PowerSgdOptions& options,
                          std::int64_t min_bytes) {
  if (options.rank < 1 || shape.size() < 2 || bytes < min_bytes) return false;
  const std::int64_t rows = shape[0];
  std::int64_t columns = 1;
  for (std::size_t d = 1; d < shape.size(); ++d) columns *= shape[d];
  return static_cast<double>(rows * columns) >=
         options.min_compression_rate * static_cast<double>((rows + columns) * options.rank);
}

PowerSgdGradient::PowerSgdGradient(std::string name, PowerSgdOptions options)
    : name_(std::move(name)), options_(options) {}

at::Tensor PowerSgdGradient::initial_q(std::int64_t columns, const at::TensorOptions& options) const {
  // The same on every rank: from the seed, the gradient's name and (without warm start) the step.
  std::uint64_t seed = options_.seed ^ std::hash<std::string>{}(name_);
  if (!options_.warm_start) seed += static_cast<std::uint64_t>(steps_) * 0x9e3779b97f4a7c15ULL;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  const std::int64_t rank = std::min<std::int64_t>(options_.rank, std::min(matrix_.size(0), columns));
  return at::randn({columns, rank}, generator, at::TensorOptions().dtype(options.dtype())).to(options.device());
}

void PowerSgdGradient::start(const at::Tensor& grad) {
  grad_ = grad;
  matrix_ = grad.reshape({grad.size(0), -1});
  if (options_.error_feedback) {
    if (!error_.defined()) error_ = at::zeros_like(matrix_);
    matrix_ = matrix_ + error_;
  }
  if (!q_.defined() || !options_.warm_start) q_ = initial_q(matrix_.size(1), matrix_.options());
  p_ = matrix_.matmul(q_);
  q_started_ = false;
  // A sum: P's scale does not matter, its columns are normalized next.
  handle_ = allreduce_async_(p_, name_ + ".powersgd.p", {ReduceOp::kSum});
  in_flight_ = true;
}

void PowerSgdGradient::start_q() {
  handle_.wait();
  p_ = orthonormal_columns(p_);
  q_ = matrix_.t().matmul(p_);
  q_started_ = true;
  handle_ = allreduce_async_(q_, name_ + ".powersgd.q", {ReduceOp::kAverage});
}

void PowerSgdGradient::finish() {
  if (!q_started_) start_q();
  handle_.wait();
  factor_bytes_ = static_cast<std::int64_t>(p_.nbytes() + q_.nbytes());
  const at::Tensor approximation = p_.matmul(q_.t());
  // An overflow anywhere in the gradients reaches the averaged Q (m x r, cheaper to check than
  // the approximation). It comes from float16 training's loss scale being too high: the caller
  // sees it in the gradient and skips the step; carried on, it would poison every later step
  // through the error and the warm-started Q. Every rank sees the same Q, so all start afresh.
  if (q_.isfinite().all().item<bool>()) {
    if (options_.error_feedback) error_ = matrix_ - approximation;
  } else {
    q_ = at::Tensor();
  }
  grad_.copy_(approximation.view(grad_.sizes()));
  grad_ = matrix_ = at::Tensor();
  in_flight_ = false;
  ++steps_;
}

void PowerSgdGradient::abandon() {
  if (in_flight_) {
    try {
      handle_.wait();
    } catch (const std::exception&) {}
  }
  grad_ = matrix_ = at::Tensor();
  in_flight_ = false;
}

}  // namespace dtrain::libtorch
