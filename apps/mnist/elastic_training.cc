#include "apps/mnist/elastic_training.h"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "dtrain/elastic.h"
#include "dtrain/torch.h"

namespace dtrain::mnist_app {
namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace

int train_elastic(const Options& options) {
  const at::Device device = training_device(options);
  const auto train_set = on_device(dtrain::mnist::load_mnist(options.data_dir, "train"), device);
  const auto test_set = on_device(dtrain::mnist::load_mnist(options.data_dir, "t10k"), device);
  torch::manual_seed(options.seed);
  dtrain::mnist::MnistNet model;
  model->to(device);
  const auto owned_optimizer = make_optimizer(options, model, 1);
  torch::optim::Optimizer& optimizer = *owned_optimizer;
  dt::ElasticSampler sampler(static_cast<std::size_t>(train_set.images.size(0)), options.seed);
  dt::TorchState state(*model, optimizer, &sampler);
  std::int64_t& step = state.counter("step");
  // Created once: its hooks outlive resets (a broken step is forgotten at the next zero_grad()).
  dt::DistributedOptimizer distributed(optimizer, model->named_parameters().pairs());

  std::int64_t furthest = 0;  // the most steps this process completed: beyond the commit, what a restore redoes
  std::int64_t steps_redone = 0;
  state.on_reset([&](const dtrain::elastic::WorldChange& change) {
    set_learning_rate(optimizer, default_learning_rate(options, change.size));
    const std::int64_t redo = change.restored ? furthest - step : 0;
    steps_redone += redo;
    if (dtrain::rank() != 0) return;
    std::printf("World changed: %d -> %d ranks (round %d, %s); resuming at step %lld, redoing %lld steps\n",
                change.previous_size, change.size, change.round, change.restored ? "a worker was lost" : "workers joined",
                static_cast<long long>(step), static_cast<long long>(redo));
    std::fflush(stdout);
  });

  const Clock::time_point started = Clock::now();
  dtrain::elastic::run(state, [&] {
    const int rank = dtrain::rank(), size = dtrain::size();
    use_cores(options, dtrain::local_size());  // this world's share of the host
    if (step == 0) set_learning_rate(optimizer, default_learning_rate(options, size));
    if (rank == 0) {
      std::printf("Training on %d ranks (elastic): batch %lld per rank, commit every %lld steps\n", size,
                  static_cast<long long>(options.batch_size), static_cast<long long>(options.commit_every));
      std::fflush(stdout);
    }
    while (sampler.epoch() < options.epochs && (options.max_steps == 0 || step < options.max_steps)) {
      const std::vector<std::size_t> indices = sampler.indices(rank, size);
      const auto batches = static_cast<std::int64_t>((indices.size() + options.batch_size - 1) / options.batch_size);
      for (std::int64_t b = 0; b < batches && (options.max_steps == 0 || step < options.max_steps); ++b) {
        const auto [images, labels] = batch_of(train_set, indices, b, options.batch_size);
        distributed.zero_grad();
        const at::Tensor loss = torch::nn::functional::nll_loss(model->forward(images), labels);
        loss.backward();
        distributed.step();
        sampler.record_batch(static_cast<std::size_t>(options.batch_size), size);
        ++step;
        furthest = std::max(furthest, step);
        if (step % options.log_every == 0) {
          const double average = dt::metric_average(loss.item<double>(), "train.loss");
          if (rank == 0) {
            std::printf("Step #%lld\tEpoch %lld\tLoss: %.6f\tranks: %d\n", static_cast<long long>(step),
                        static_cast<long long>(sampler.epoch()), average, size);
            std::fflush(stdout);
          }
        }
        if (step % options.commit_every == 0) state.commit();
      }
      sampler.set_epoch(sampler.epoch() + 1);
    }
  });
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const double accuracy = test_accuracy(model, test_set, true);
  if (dtrain::rank() == 0) {
    std::printf("Trained %lld steps in %.1f s on %d ranks at the end; %lld steps redone after resets\n",
                static_cast<long long>(step), seconds, dtrain::size(), static_cast<long long>(steps_redone));
    std::printf("Test accuracy: %.4f\n", accuracy);
    std::fflush(stdout);
  }
  write_model(model, options, dtrain::rank(), accuracy);
  dtrain::shutdown();
  return 0;
}

}  // namespace dtrain::mnist_app
