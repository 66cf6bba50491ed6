#include "apps/maskrcnn/training_hooks.h"

#include "apps/maskrcnn/training_checkpoint.h"

namespace dtrain::maskrcnn {

// After iteration `done`: a checkpoint every CHECKPOINT_PERIOD and an evaluation every
// EVAL_PERIOD (the last iteration's are the final model's, see finish_training).
void CheckpointAndEvaluateHook::after_step(int64_t done) {
  const StepPlan& steps = run_.steps;
  const bool save = steps.checkpoint_period > 0 && done % steps.checkpoint_period == 0 && done != steps.max_iter;
  const bool eval =
      steps.eval_period > 0 && done % steps.eval_period == 0 && done != steps.max_iter && has_data(run_.test_data);
  if (!save && !eval) return;
  watch_.check();  // never a checkpoint of NaN weights
  average_batch_norm_statistics(*m_.model);
  if (run_.placement.rank == 0 && save) {
    exchange_.before_checkpoint();
    save_training_checkpoint(run_.output_dir, checkpoint_name(done), *m_.model, m_.sgd, m_.trainable, done,
                             m_.loss_scale());
  }
  if (eval && exchange_.evaluates_during_training()) {
    evaluate(*m_.model, run_.test_data, run_.output_dir, done, run_.log);
  }
}

}  // namespace dtrain::maskrcnn
