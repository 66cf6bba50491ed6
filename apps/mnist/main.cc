// dtrain-mnist: the seeds' data-parallel MNIST example. Run it under the launcher:
//
//   dtrain run -np 2 -- dtrain-mnist --epochs 1
//
// Each rank trains on its shard of the 60,000 training images with batch 128; gradients are
// averaged by allreduce as backward produces them; rank 0 prints the loss averaged across
// ranks every 50 steps, writes checkpoints and the final model, and reports test accuracy.
//
// With `--distribution ps` (under `dtrain run --ps`) the same loop trains through parameter
// servers instead: PSOptimizer pushes gradients and installs the servers' fresh weights,
// asynchronously unless the servers run in sync mode; rank 0 (the chief) prints its own
// loss, writes the checkpoints and the final model and scores the test set alone.
#include <CLI/CLI.hpp>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/serialize.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

#include "apps/mnist/elastic_training.h"
#include "apps/mnist/training_parts.h"
#include "mnist/mnist_idx.h"
#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "training/gradient_step.h"
#include "training/iteration_timer.h"
#include "training/trainer.h"
#include "mnist/mnist_net.h"
#include "mnist/mnist_tensors.h"

namespace {

namespace dt = dtrain::libtorch;
using dtrain::mnist_app::make_optimizer;
using dtrain::mnist_app::Options;
using dtrain::mnist_app::test_accuracy;
using dtrain::mnist_app::write_model;

bool parameter_servers(const Options& options) { return options.distribution == "ps"; }

// Where this process sits. Parameter-server workers do not use the runtime: their placement
// is the launcher's.
dtrain::Placement start(bool ps) {
  if (ps) return dtrain::placement_from_environment();
  dtrain::init();
  return {dtrain::rank(),       dtrain::size(),       dtrain::local_rank(),
          dtrain::local_size(), dtrain::cross_rank(), dtrain::cross_size()};
}

// Parameter-server workers do not use the runtime: rank 0 restores its checkpoint alone
// and hands the servers its weights and step.
std::optional<dt::Checkpointer> checkpointer_for(const Options& options, bool ps, int rank) {
  if (options.checkpoint_dir.empty()) return std::nullopt;
  return std::make_optional<dt::Checkpointer>(options.checkpoint_dir, 3, ps ? rank : -1);
}

// --resume: where the newest checkpoint left off; otherwise the start.
dt::TrainingProgress restore(const Options& options, const std::optional<dt::Checkpointer>& checkpointer,
                             dtrain::mnist::MnistNet& model, torch::optim::Optimizer& optimizer, int rank) {
  if (!options.resume) return {};
  if (!checkpointer) throw dtrain::Error("dtrain-mnist: --resume needs --checkpoint-dir");
  if (auto restored = checkpointer->restore(*model, optimizer)) {
    if (rank == 0)
      std::printf("Resumed from step %lld (epoch %lld)\n", static_cast<long long>(restored->step),
                  static_cast<long long>(restored->epoch));
    return *restored;
  }
  if (rank == 0) std::printf("No checkpoint in %s; starting fresh\n", options.checkpoint_dir.c_str());
  return {};
}

// The optimizer --distribution puts around Adam, chosen once: DistributedOptimizer averages
// the gradients over the ranks; PSOptimizer pushes them to the parameter servers and installs
// their fresh weights. The engine's step drives it (training::GradientPath).
class GradientExchange : public dtrain::training::GradientPath {
 public:
  GradientExchange(bool ps, torch::optim::Optimizer& optimizer, dtrain::mnist::MnistNet& model,
                   std::int64_t restored_step, int rank, const Options& options)
      : rank_(rank), start_step_(restored_step) {
    if (ps) {
      servers_.emplace(optimizer, model->named_parameters().pairs(), restored_step);
      start_step_ = servers_->start_step();
      if (rank == 0) {
        std::printf("Parameter servers: %s updates\n", servers_->mode().c_str());
        std::fflush(stdout);
      }
    } else {
      dt::DistributedOptimizerOptions reduce;
      reduce.power_sgd.rank = options.power_sgd_rank;
      // The optimizer counts its own steps; a resumed run has done restored_step of them.
      reduce.power_sgd.start_step = std::max<std::int64_t>(0, options.power_sgd_start_step - restored_step);
      allreduce_.emplace(optimizer, model->named_parameters().pairs(), reduce);
      // Start every rank from rank 0's weights and optimizer state.
      dt::broadcast_parameters(dt::named_state(*model), 0);
      dt::broadcast_optimizer_state(optimizer, 0);
    }
  }

  // The step training starts at: the restored one, or the chief's (parameter servers).
  std::int64_t start_step() const { return start_step_; }
  void zero_grad() override { servers_ ? servers_->zero_grad() : allreduce_->zero_grad(); }
  void wait_for_gradients() override {
    if (allreduce_) allreduce_->synchronize();  // a worker of parameter servers pushes its own in apply()
  }
  void apply() override { servers_ ? servers_->step() : allreduce_->step(); }
  // What this rank's last step handed to the allreduces (0 under parameter servers).
  std::int64_t reduced_bytes() const { return allreduce_ ? allreduce_->reduced_bytes() : 0; }
  // Parameter-server workers do not meet: the chief reports its own loss.
  double reported_loss(double loss) { return servers_ ? loss : dt::metric_average(loss, "train.loss"); }
  void before_checkpoint() {
    if (servers_ && rank_ == 0) servers_->pull_parameters();  // every shard, as the servers hold it now
  }
  // After the last step; whether this rank goes on to score and write the model. The chief
  // waits for the other parameter-server workers, then pulls the final weights.
  bool finish() {
    if (!servers_) return true;
    servers_->finish();
    return rank_ == 0;
  }

 private:
  std::optional<dt::DistributedOptimizer> allreduce_;
  std::optional<dt::PSOptimizer> servers_;
  int rank_;
  std::int64_t start_step_;
};

// The loop's length: batches per epoch of this rank's shard, and steps in all (--steps caps them).
struct StepPlan {
  std::int64_t per_epoch, total;
};

StepPlan step_plan(const Options& options, const dt::DistributedSampler& sampler) {
  const auto per_epoch =
      static_cast<std::int64_t>((sampler.num_samples() + options.batch_size - 1) / options.batch_size);
  const std::int64_t all = per_epoch * options.epochs;
  return {per_epoch, options.max_steps > 0 ? std::min(options.max_steps, all) : all};
}

// Every --log-every steps and at the end: the loss, images per second since the last report
// and the time left, printed by rank 0.
class ProgressLog {
 public:
  ProgressLog(const Options& options, const dtrain::Placement& placement, const StepPlan& plan,
              dtrain::training::IterationTimer& timer)
      : options_(options), rank_(placement.rank), size_(placement.size), total_(plan.total), timer_(timer) {}

  void step_done(std::int64_t step, const at::Tensor& loss, GradientExchange& exchange) {
    if (step % options_.log_every != 0 && step != total_) return;
    const double average_loss = exchange.reported_loss(loss.item<double>());
    const dtrain::training::IterationTimer::Window window = timer_.take_window();
    const double images_per_second = static_cast<double>(window.steps * options_.batch_size * size_) / window.seconds;
    const double eta = timer_.eta_s(step, total_);
    if (rank_ == 0) {
      std::printf("Step #%lld\tLoss: %.6f\timages/s: %.1f\tETA: %.0f s\n", static_cast<long long>(step), average_loss,
                  images_per_second, eta);
      std::fflush(stdout);
    }
  }

 private:
  const Options& options_;
  const int rank_, size_;
  const std::int64_t total_;
  dtrain::training::IterationTimer& timer_;
};

// One step on the images at positions [b * batch, (b + 1) * batch) of this epoch's shard;
// returns the loss.
at::Tensor train_batch(dtrain::mnist::MnistNet& model, const dtrain::mnist::MnistTensors& train_set,
                       const std::vector<std::size_t>& indices, std::int64_t b, std::int64_t batch_size,
                       GradientExchange& exchange) {
  const auto [images, labels] = dtrain::mnist_app::batch_of(train_set, indices, b, batch_size);
  const at::Tensor loss = torch::nn::functional::nll_loss(model->forward(images), labels);
  dtrain::training::float32_step(loss, exchange);
  return loss;
}

// At each epoch's end and every --checkpoint-every steps.
bool checkpoint_due(const Options& options, const StepPlan& plan, std::int64_t step) {
  const bool epoch_end = step % plan.per_epoch == 0 || step == plan.total;
  return (options.checkpoint_every > 0 && step % options.checkpoint_every == 0) || epoch_end;
}

// This epoch's shard of the training set, drawn again when a step starts a new epoch.
class EpochBatches {
 public:
  EpochBatches(dt::DistributedSampler& sampler, const StepPlan& plan) : sampler_(sampler), plan_(plan) {}
  const std::vector<std::size_t>& indices_for(std::int64_t step) {
    const std::int64_t epoch = step / plan_.per_epoch;
    if (epoch != epoch_) {
      sampler_.set_epoch(epoch);
      indices_ = sampler_.indices();
      epoch_ = epoch;
    }
    return indices_;
  }

 private:
  dt::DistributedSampler& sampler_;
  const StepPlan& plan_;
  std::int64_t epoch_ = -1;
  std::vector<std::size_t> indices_;
};

// After every step: the progress line when it is due (ProgressLog).
class ProgressHook : public dtrain::training::Hook {
 public:
  ProgressHook(ProgressLog& log, const at::Tensor& loss, GradientExchange& exchange)
      : log_(log), loss_(loss), exchange_(exchange) {}
  void after_step(std::int64_t done) override { log_.step_done(done, loss_, exchange_); }

 private:
  ProgressLog& log_;
  const at::Tensor& loss_;
  GradientExchange& exchange_;
};

// Rank 0's checkpoints, at each epoch's end and every --checkpoint-every steps.
class CheckpointHook : public dtrain::training::Hook {
 public:
  CheckpointHook(dt::Checkpointer& checkpointer, dtrain::mnist::MnistNet& model, torch::optim::Optimizer& optimizer,
                 const dt::TrainingProgress& progress, GradientExchange& exchange, const Options& options,
                 const StepPlan& plan)
      : checkpointer_(checkpointer),
        model_(model),
        optimizer_(optimizer),
        progress_(progress),
        exchange_(exchange),
        options_(options),
        plan_(plan) {}
  void after_step(std::int64_t done) override {
    if (!checkpoint_due(options_, plan_, done)) return;
    exchange_.before_checkpoint();
    checkpointer_.save(*model_, optimizer_, progress_);
  }

 private:
  dt::Checkpointer& checkpointer_;
  dtrain::mnist::MnistNet& model_;
  torch::optim::Optimizer& optimizer_;
  const dt::TrainingProgress& progress_;
  GradientExchange& exchange_;
  const Options& options_;
  const StepPlan& plan_;
};

void announce(const Options& options, const dtrain::Placement& placement, double lr, const StepPlan& plan) {
  if (placement.rank != 0) return;
  std::printf("Training on %d ranks: batch %lld per rank, learning rate %g, %lld steps per epoch, %lld steps\n",
              placement.size, static_cast<long long>(options.batch_size), lr, static_cast<long long>(plan.per_epoch),
              static_cast<long long>(plan.total));
  std::fflush(stdout);
}

// Rank 0: the training time, the test accuracy (scored by every rank, or by the chief alone
// under parameter servers) and the model.
void score_and_write(dtrain::mnist::MnistNet& model, const dtrain::mnist::MnistTensors& test_set,
                     const Options& options, const dtrain::Placement& placement, std::int64_t steps, double seconds) {
  const double accuracy = test_accuracy(model, test_set, !parameter_servers(options));
  if (placement.rank == 0) {
    std::printf("Trained %lld steps in %.1f s (%.1f images/s)\n", static_cast<long long>(steps), seconds,
                static_cast<double>(steps * options.batch_size * placement.size) / seconds);
    std::printf("Test accuracy: %.4f\n", accuracy);
    std::fflush(stdout);
  }
  write_model(model, options, placement.rank, accuracy);
}

int train(const Options& options) {
  const bool ps = parameter_servers(options);
  const dtrain::Placement placement = start(ps);
  const int rank = placement.rank;
  dtrain::mnist_app::use_cores(options, placement.local_size);
  const at::Device device = dtrain::mnist_app::training_device(options);
  const auto train_set = dtrain::mnist_app::on_device(dtrain::mnist::load_mnist(options.data_dir, "train"), device);
  const auto test_set = dtrain::mnist_app::on_device(dtrain::mnist::load_mnist(options.data_dir, "t10k"), device);

  torch::manual_seed(options.seed);
  dtrain::mnist::MnistNet model;
  model->to(device);
  const auto owned_optimizer = make_optimizer(options, model, placement.size);
  torch::optim::Optimizer& optimizer = *owned_optimizer;
  const double lr = optimizer.param_groups().front().options().get_lr();
  std::optional<dt::Checkpointer> checkpointer = checkpointer_for(options, ps, rank);
  dt::TrainingProgress progress = restore(options, checkpointer, model, optimizer, rank);
  GradientExchange exchange(ps, optimizer, model, progress.step, rank, options);
  progress.step = exchange.start_step();
  // Dropout differs per rank and per resumption point.
  torch::manual_seed(options.seed + 1000 * static_cast<std::uint64_t>(rank) +
                     static_cast<std::uint64_t>(progress.step));

  dt::DistributedSampler sampler(static_cast<std::size_t>(train_set.images.size(0)), placement.size, rank, true,
                                 options.seed);
  const StepPlan plan = step_plan(options, sampler);
  announce(options, placement, lr, plan);
  model->train();
  EpochBatches batches(sampler, plan);
  at::Tensor loss;
  dtrain::training::Trainer trainer([&](std::int64_t step) {
    loss =
        train_batch(model, train_set, batches.indices_for(step), step % plan.per_epoch, options.batch_size, exchange);
    progress.epoch = (step + 1) / plan.per_epoch;
  });
  auto& timer = trainer.emplace<dtrain::training::IterationTimer>();
  ProgressLog log(options, placement, plan, timer);
  trainer.emplace<ProgressHook>(log, loss, exchange);
  if (checkpointer) trainer.emplace<CheckpointHook>(*checkpointer, model, optimizer, progress, exchange, options, plan);
  const std::int64_t first_step = progress.step;
  trainer.train(progress.step, plan.total);
  const double seconds = timer.elapsed_s();
  if (rank == 0 && !ps) {
    std::printf("Gradients allreduced: %lld bytes per step\n", static_cast<long long>(exchange.reduced_bytes()));
  }
  if (!exchange.finish()) return 0;
  score_and_write(model, test_set, options, placement, progress.step - first_step, seconds);
  if (!ps) dtrain::shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"dtrain-mnist: data-parallel MNIST training (run under `dtrain run`)"};
  app.add_option("--epochs", options.epochs, "Epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--steps", options.max_steps, "Stop after this many steps in all (0: no limit)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch-size", options.batch_size, "Images per rank per step")->check(CLI::PositiveNumber);
  app.add_option("--optimizer", options.optimizer, "adam (default) or sgd (momentum 0.5)")
      ->check(CLI::IsMember({"adam", "sgd"}));
  app.add_option("--learning-rate,--lr", options.learning_rate,
                 "Learning rate (default: Adam 0.000125 x ranks, SGD 0.01 x ranks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--data-dir", options.data_dir, "Directory with the MNIST idx files");
  app.add_option("--model-dir", options.model_dir, "Where rank 0 writes model.pt and model.json");
  app.add_option("--checkpoint-dir", options.checkpoint_dir, "Where rank 0 writes checkpoints");
  app.add_option("--checkpoint-every", options.checkpoint_every, "Checkpoint every N steps (0: each epoch end)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", options.resume, "Continue from the newest checkpoint in --checkpoint-dir");
  app.add_option("--seed", options.seed, "Seed shared by all ranks");
  app.add_option("--device", options.device, "cpu, or cuda: each rank on its GPU (cuda:local_rank)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--threads", options.threads, "LibTorch threads per rank (0: cores / local ranks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-every", options.log_every, "Print the loss every N steps")->check(CLI::PositiveNumber);
  // A flag that also takes a value, as a job's hyperparameter `elastic: true` passes it (--elastic True).
  app.add_option("--elastic", options.elastic,
                 "An elastic job (under `dtrain run --min-np N`): go on when workers are lost or join")
      ->expected(0, 1)
      ->default_str("true")
      ->option_text("[BOOL]")
      ->excludes("--resume");
  app.add_option("--commit-every", options.commit_every, "With --elastic: steps between in-memory commits")
      ->check(CLI::PositiveNumber);
  app.add_option("--power-sgd-rank", options.power_sgd_rank,
                 "Allreduce gradient matrices as PowerSGD's rank-R factors, with error feedback (0: exact)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--power-sgd-start-step", options.power_sgd_start_step,
                 "With --power-sgd-rank: steps reduced exactly before PowerSGD begins")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--distribution", options.distribution,
                 "allreduce (default) or ps: train through parameter servers (under `dtrain run --ps`)")
      ->check(CLI::IsMember({"allreduce", "ps"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // SageMaker's container contract: the model directory and the training channel.
  if (options.model_dir.empty()) {
    if (const char* sm = std::getenv("SM_MODEL_DIR")) options.model_dir = sm;
  }
  if (const char* sm = std::getenv("SM_CHANNEL_TRAINING"); sm && !app.count("--data-dir")) options.data_dir = sm;
  try {
    if (options.elastic && options.power_sgd_start_step > 0) {
      // The optimizer counts its own process's steps: a worker that joins would count from 0.
      std::fprintf(stderr,
                   "dtrain-mnist: --power-sgd-start-step with --elastic: workers that join would count "
                   "from 0; use 0\n");
      return 2;
    }
    if (options.power_sgd_rank > 0 && parameter_servers(options)) {
      std::fprintf(stderr, "dtrain-mnist: --power-sgd-rank applies to allreduce; drop --distribution ps\n");
      return 2;
    }
    if (options.elastic && parameter_servers(options)) {
      std::fprintf(stderr, "dtrain-mnist: --elastic trains through allreduce; drop --distribution ps\n");
      return 2;
    }
    return options.elastic ? dtrain::mnist_app::train_elastic(options) : train(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-mnist: %s\n", e.what());
    return 1;
  }
}
