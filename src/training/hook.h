// A part of training that acts around the steps: a learning-rate schedule, a progress
// writer, a checkpointer, an evaluator, an elastic commit. The trainer (trainer.h) calls every
// hook in the order they were added, at the four points below; a hook that throws ends
// training with its error. Detectron2's HookBase is the model.
#pragma once

#include <cstdint>

namespace dtrain::training {

class Hook {
 public:
  virtual ~Hook() = default;
  // Once, before the first step of this call to Trainer::train.
  virtual void before_train(int64_t /*iteration*/) {}
  // Before the step that runs iteration `iteration` (0-based).
  virtual void before_step(int64_t /*iteration*/) {}
  // After a step: `done` iterations are complete (the step ran iteration done - 1).
  virtual void after_step(int64_t /*done*/) {}
  // Once, when the last iteration is done (not when a step throws).
  virtual void after_train(int64_t /*done*/) {}
};

// Whether a period of `period` iterations (0: never) ends after `done` of them.
inline bool period_ends(int64_t done, int64_t period) { return period > 0 && done % period == 0; }

}  // namespace dtrain::training
