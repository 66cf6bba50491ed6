#include "training/trainer.h"

namespace dtrain::training {

void Trainer::train(int64_t& iteration, int64_t max_iter) {
  train_while(iteration, [max_iter](int64_t i) { return i < max_iter; });
}

void Trainer::train_while(int64_t& iteration, const std::function<bool(int64_t)>& more) {
  for (const auto& hook : hooks_) hook->before_train(iteration);
  while (more(iteration)) {
    for (const auto& hook : hooks_) hook->before_step(iteration);
    step_(iteration);
    ++iteration;
    for (const auto& hook : hooks_) hook->after_step(iteration);
  }
  for (const auto& hook : hooks_) hook->after_train(iteration);
}

}  // namespace dtrain::training
