#include "apps/mnist/elastic_training.h"

#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "dtrain/elastic.h"
#include "dtrain/torch.h"
#include "training/gradient_step.h"
#include "training/periodic_hook.h"
#include "training/trainer.h"

namespace dtrain::mnist_app {
namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

// This world's batches of the epoch in the order the elastic sampler gives them, and the next
// epoch's when they run out, up to --epochs.
class ElasticEpochs {
 public:
  ElasticEpochs(dt::ElasticSampler& sampler, const Options& options, int rank, int size)
      : sampler_(sampler), options_(options), rank_(rank), size_(size) {}

  // Whether a batch is left, opening the next epoch when this one is done.
  bool next_batch_ready() {
    while (!open_ || batch_ == batches_) {
      close();
      if (sampler_.epoch() >= options_.epochs) return false;
      indices_ = sampler_.indices(rank_, size_);
      batches_ = static_cast<std::int64_t>((indices_.size() + options_.batch_size - 1) / options_.batch_size);
      batch_ = 0;
      open_ = true;
    }
    return true;
  }
  const std::vector<std::size_t>& indices() const { return indices_; }
  std::int64_t take_batch() { return batch_++; }
  // Ends the open epoch, if any: the sampler moves on to the next.
  void close() {
    if (!open_) return;
    sampler_.set_epoch(sampler_.epoch() + 1);
    open_ = false;
  }

 private:
  dt::ElasticSampler& sampler_;
  const Options& options_;
  const int rank_, size_;
  bool open_ = false;
  std::vector<std::size_t> indices_;
  std::int64_t batches_ = 0, batch_ = 0;
};

// Every --log-every steps: the loss averaged over the ranks, printed by rank 0.
class LossLogHook : public training::Hook {
 public:
  LossLogHook(const at::Tensor& loss, const dt::ElasticSampler& sampler, std::int64_t every, int rank, int size)
      : loss_(loss), sampler_(sampler), every_(every), rank_(rank), size_(size) {}
  void after_step(std::int64_t done) override {
    if (!training::period_ends(done, every_)) return;
    const double average = dt::metric_average(loss_.item<double>(), "train.loss");
    if (rank_ != 0) return;
    std::printf("Step #%lld\tEpoch %lld\tLoss: %.6f\tranks: %d\n", static_cast<long long>(done),
                static_cast<long long>(sampler_.epoch()), average, size_);
    std::fflush(stdout);
  }

 private:
  const at::Tensor& loss_;
  const dt::ElasticSampler& sampler_;
  const std::int64_t every_;
  const int rank_, size_;
};

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
  dt::DistributedOptimizerOptions reduce;
  reduce.power_sgd.rank = options.power_sgd_rank;
  reduce.power_sgd.start_step = options.power_sgd_start_step;
  dt::DistributedOptimizer distributed(optimizer, model->named_parameters().pairs(), reduce);
  training::AllreducePath averaged(distributed);

  std::int64_t furthest = 0;  // the most steps this process completed: beyond the commit, what a restore redoes
  std::int64_t steps_redone = 0;
  state.on_reset([&](const dtrain::elastic::WorldChange& change) {
    set_learning_rate(optimizer, default_learning_rate(options, change.size));
    const std::int64_t redo = change.restored ? furthest - step : 0;
    steps_redone += redo;
    if (dtrain::rank() != 0) return;
    std::printf("World changed: %d -> %d ranks (round %d, %s); resuming at step %lld, redoing %lld steps\n",
                change.previous_size, change.size, change.round,
                change.restored ? "a worker was lost" : "workers joined", static_cast<long long>(step),
                static_cast<long long>(redo));
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
    ElasticEpochs epochs(sampler, options, rank, size);
    at::Tensor loss;
    training::Trainer trainer([&](std::int64_t current) {
      const auto [images, labels] = batch_of(train_set, epochs.indices(), epochs.take_batch(), options.batch_size);
      loss = torch::nn::functional::nll_loss(model->forward(images), labels);
      training::float32_step(loss, averaged);
      sampler.record_batch(static_cast<std::size_t>(options.batch_size), size);
      furthest = std::max(furthest, current + 1);
    });
    trainer.emplace<LossLogHook>(loss, sampler, options.log_every, rank, size);
    // Every --commit-every steps: the state a lost worker's world goes back to.
    trainer.emplace<training::PeriodicHook>(options.commit_every, [&state](std::int64_t) { state.commit(); });
    trainer.train_while(step, [&](std::int64_t current) {
      if (options.max_steps != 0 && current >= options.max_steps) {
        epochs.close();
        return false;
      }
      return epochs.next_batch_ready();
    });
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
