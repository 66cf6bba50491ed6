#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::ps {

// The optimizer a server runs on the pieces it holds, with the semantics of
// LibTorch's torch::optim::SGD and torch::optim::Adam (same order of
// operations, float32 arithmetic), so a parameter-server run in sync mode
// follows the allreduce run of the same optimizer.
struct UpdateRuleSpec {
  enum class Kind { kSgd, kAdam };
  Kind kind = Kind::kSgd;
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  double weight_decay = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;

  bool operator==(const UpdateRuleSpec&) const = default;
  std::string describe() const;
};

// Per-piece optimizer state: SGD's momentum buffer, or Adam's two moments and step.
struct UpdateState {
  std::vector<float> first;   // SGD momentum buffer / Adam exp_avg (empty until the first step)
  std::vector<float> second;  // Adam exp_avg_sq
  std::int64_t steps = 0;
};

// Applies one step with `gradient` (same length as `values`) at `learning_rate`.
void apply_update(const UpdateRuleSpec& rule, double learning_rate, const float* gradient, float* values,
                  std::int64_t elements, UpdateState& state);

}  // namespace dtrain::ps
