// `dtrain-mnist --elastic`: the training loop as an elastic job (docs/elastic.md). The world
// may shrink or grow mid-epoch; the state (model, Adam's moments, the epoch's position) goes
// back to the last commit after a lost worker, and the learning rate follows the world's size.
#pragma once

#include "apps/mnist/training_parts.h"

namespace dtrain::mnist_app {

// Trains --epochs epochs through dtrain::elastic::run; rank 0 scores and writes the model.
int train_elastic(const Options& options);

}  // namespace dtrain::mnist_app
