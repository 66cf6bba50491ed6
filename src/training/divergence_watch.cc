#include "training/divergence_watch.h"

#include <limits>
#include <stdexcept>

#include "dtrain/torch.h"

namespace dtrain::training {

void DivergenceWatch::observe(const std::map<std::string, at::Tensor>& losses, const at::Tensor& total,
                              int64_t iteration) {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> values;
  if (names_.empty()) {
    for (const auto& [name, value] : losses) names_.push_back(name);
  }
  for (const auto& [name, value] : losses) values.push_back(value.detach().to(at::kDouble).reshape({}));
  const at::Tensor stacked = at::stack(values);
  if (!first_bad_.defined()) {
    first_bad_ = at::full({}, int64_t{-1}, stacked.options().dtype(at::kLong));
    values_ = at::zeros_like(stacked);
  }
  const at::Tensor first_now = total.detach().isfinite().logical_not().logical_and(first_bad_ < 0);
  first_bad_ = at::where(first_now, at::full_like(first_bad_, iteration), first_bad_);
  values_ = at::where(first_now, stacked, values_);
}

void DivergenceWatch::check() const {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const int64_t mine = first_bad_.defined() ? first_bad_.item<int64_t>() : -1;
  const at::Tensor local = torch::tensor({mine < 0 ? kNone : mine}, torch::kInt64);
  const int64_t first = libtorch::allreduce(local, "trainer.divergence", {ReduceOp::kMin}).item<int64_t>();
  if (first == kNone) return;
  std::string seen = "on another rank";
  if (mine == first) {
    const at::Tensor values = values_.to(at::kCPU);
    seen.clear();
    for (size_t i = 0; i < names_.size(); ++i) {
      seen += (i ? ", " : "") + names_[i] + " " + std::to_string(values[static_cast<int64_t>(i)].item<double>());
    }
  }
  throw std::runtime_error("rank " + std::to_string(rank_) + ": the loss became NaN or infinite at iteration " +
                           std::to_string(first + 1) + " (" + seen + "); " + advice_);
}

}  // namespace dtrain::training
