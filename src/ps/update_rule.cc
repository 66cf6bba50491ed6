#include "ps/update_rule.h"

#include <cmath>

#include <fmt/format.h>

namespace dtrain::ps {

std::string UpdateRuleSpec::describe() const {
  if (kind == Kind::kAdam) {
    return fmt::format("adam(betas=({}, {}), eps={}, weight_decay={})", beta1, beta2, eps, weight_decay);
  }
  return fmt::format("sgd(momentum={}, dampening={}, nesterov={}, weight_decay={})", momentum, dampening, nesterov,
                     weight_decay);
}

namespace {

// torch::optim::SGD: d = g + wd*p; buf = d on the first step, else momentum*buf + (1-dampening)*d;
// the step uses d + momentum*buf (Nesterov) or buf.
void sgd_step(const UpdateRuleSpec& r, float lr, const float* g, float* p, std::int64_t n, UpdateState& s) {
  const float wd = static_cast<float>(r.weight_decay), momentum = static_cast<float>(r.momentum);
  const float keep = static_cast<float>(1 - r.dampening);
  const bool first = s.first.empty();
  if (momentum != 0 && first) s.first.resize(static_cast<size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    float d = wd != 0 ? g[i] + wd * p[i] : g[i];
    if (momentum != 0) {
      float& buf = s.first[static_cast<size_t>(i)];
      buf = first ? d : buf * momentum + keep * d;
      d = r.nesterov ? d + momentum * buf : buf;
    }
    p[i] += -lr * d;
  }
  ++s.steps;
}

// torch::optim::Adam (amsgrad off): m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
// p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
void adam_step(const UpdateRuleSpec& r, double lr, const float* g, float* p, std::int64_t n, UpdateState& s) {
  if (s.first.empty()) {
    s.first.assign(static_cast<size_t>(n), 0.0f);
    s.second.assign(static_cast<size_t>(n), 0.0f);
  }
  ++s.steps;
  const double bias1 = 1 - std::pow(r.beta1, static_cast<double>(s.steps));
  const double bias2 = 1 - std::pow(r.beta2, static_cast<double>(s.steps));
  const float b1 = static_cast<float>(r.beta1), b2 = static_cast<float>(r.beta2);
  const float one_minus_b1 = static_cast<float>(1 - r.beta1), one_minus_b2 = static_cast<float>(1 - r.beta2);
  const float sqrt_bias2 = static_cast<float>(std::sqrt(bias2));
  const float eps = static_cast<float>(r.eps), wd = static_cast<float>(r.weight_decay);
  const float step_size = static_cast<float>(lr / bias1);
  float* m = s.first.data();
  float* v = s.second.data();
  for (std::int64_t i = 0; i < n; ++i) {
    const float grad = wd != 0 ? g[i] + wd * p[i] : g[i];
    m[i] = m[i] * b1 + one_minus_b1 * grad;
    v[i] = v[i] * b2 + one_minus_b2 * grad * grad;
    const float denom = std::sqrt(v[i]) / sqrt_bias2 + eps;
    p[i] += -step_size * (m[i] / denom);
  }
}

}  // namespace

void apply_update(const UpdateRuleSpec& rule, double learning_rate, const float* gradient, float* values,
                  std::int64_t elements, UpdateState& state) {
  if (rule.kind == UpdateRuleSpec::Kind::kAdam) {
    adam_step(rule, learning_rate, gradient, values, elements, state);
  } else {
    sgd_step(rule, static_cast<float>(learning_rate), gradient, values, elements, state);
  }
}

}  // namespace dtrain::ps
