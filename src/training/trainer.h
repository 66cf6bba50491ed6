// The training loop, and only the loop: it runs a step for each iteration up to the last and
// calls the hooks around it. What a step computes (losses, backward, gradient exchange, the
// optimizer) is the step's; when to log, checkpoint, evaluate or commit is a hook's. A model's
// training is then a step and a list of hooks (apps/maskrcnn/trainer.cc wires Mask R-CNN's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "training/hook.h"

namespace dtrain::training {

class Trainer {
 public:
  // step(iteration) runs one iteration (0-based).
  explicit Trainer(std::function<void(int64_t)> step) : step_(std::move(step)) {}

  // Hooks run in the order added. The trainer owns them; the caller keeps a reference to
  // read what a hook knows (the learning rate, the timer).
  template <typename H>
  H& add(std::unique_ptr<H> hook) {
    H& added = *hook;
    hooks_.push_back(std::move(hook));
    return added;
  }
  template <typename H, typename... Args>
  H& emplace(Args&&... args) {
    return add(std::make_unique<H>(std::forward<Args>(args)...));
  }

  // Runs iterations `iteration` .. max_iter - 1, advancing `iteration` after each step. The
  // counter is the caller's, so that an elastic job's state can hold it and restore it: a
  // reset resumes the loop at the restored value.
  void train(int64_t& iteration, int64_t max_iter);
  // The same for a loop whose end is not a step count: steps while more(iteration) holds
  // (an elastic job whose epochs end where its sampler runs dry).
  void train_while(int64_t& iteration, const std::function<bool(int64_t)>& more);

 private:
  std::function<void(int64_t)> step_;
  std::vector<std::unique_ptr<Hook>> hooks_;
};

}  // namespace dtrain::training
