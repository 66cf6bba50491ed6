#include "training/trainer.h"

namespace dtrain::training {

Hook& Trainer::add(std::unique_ptr<Hook> hook) {
  hooks_.push_back(std::move(hook));
  return *hooks_.back();
}

void Trainer::train(int64_t& iteration, int64_t max_iter) {
  for (const auto& hook : hooks_) hook->before_train(iteration);
  while (iteration < max_iter) {
    for (const auto& hook : hooks_) hook->before_step(iteration);
    step_(iteration);
    ++iteration;
    for (const auto& hook : hooks_) hook->after_step(iteration);
  }
  for (const auto& hook : hooks_) hook->after_train(iteration);
}

}  // namespace dtrain::training
