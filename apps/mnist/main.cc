// dtrain-mnist: the seeds' data-parallel MNIST example. Run it under the launcher:
//
//   dtrain run -np 2 -- dtrain-mnist --epochs 1
//
// Each rank trains on its shard of the 60,000 training images with batch 128; gradients are
// averaged by allreduce as backward produces them; rank 0 prints the loss averaged across
// ranks every 50 steps, writes checkpoints and the final model, and reports test accuracy.
#include <CLI/CLI.hpp>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/mnist_idx.h"
#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "mnist_net.h"
#include "mnist_tensors.h"

namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

struct Options {
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0: run every epoch to the end
  std::int64_t batch_size = 128;
  double learning_rate = 0;  // 0: 0.000125 * size, as in the tutorial
  std::string data_dir = "data/mnist";
  std::string model_dir;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;  // steps; 0: at the end of each epoch only
  bool resume = false;
  std::uint64_t seed = 42;
  int threads = 0;  // 0: the cores divided among this host's ranks
  std::int64_t log_every = 50;
};

double test_accuracy(dtrain::mnist::MnistNet& model, const dtrain::mnist::MnistTensors& test) {
  // Every rank scores a contiguous slice; the counts are summed.
  model->eval();
  torch::NoGradGuard no_grad;
  const std::int64_t n = test.images.size(0);
  const std::int64_t begin = n * dtrain::rank() / dtrain::size(), end = n * (dtrain::rank() + 1) / dtrain::size();
  std::int64_t correct = 0;
  for (std::int64_t i = begin; i < end; i += 1000) {
    const std::int64_t j = std::min(end, i + 1000);
    const at::Tensor predicted = model->forward(test.images.slice(0, i, j)).argmax(1);
    correct += predicted.eq(test.labels.slice(0, i, j)).sum().item<std::int64_t>();
  }
  std::int64_t counts[2] = {correct, end - begin};
  dtrain::allreduce("test.counts", {counts, dtrain::DataType::kInt64, {2}}, {counts, dtrain::DataType::kInt64, {2}},
                    {dtrain::ReduceOp::kSum});
  model->train();
  return static_cast<double>(counts[0]) / static_cast<double>(counts[1]);
}

void write_model(dtrain::mnist::MnistNet& model, const Options& options, double accuracy) {
  if (dtrain::rank() != 0 || options.model_dir.empty()) return;
  std::filesystem::create_directories(options.model_dir);
  torch::save(model, options.model_dir + "/model.pt");
  // What a server needs to know to load the weights.
  std::ofstream meta(options.model_dir + "/model.json");
  meta << "{\"kind\": \"mnist\", \"weights\": \"model.pt\", \"input\": [1, 28, 28], \"classes\": 10, "
       << "\"test_accuracy\": " << accuracy << "}\n";
}

int train(const Options& options) {
  dtrain::init();
  const int rank = dtrain::rank(), size = dtrain::size();
  const int threads =
      options.threads > 0 ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / dtrain::local_size());
  dt::set_num_threads(threads);
  dt::pin_device();

  const auto train_set = dtrain::mnist::load_mnist(options.data_dir, "train");
  const auto test_set = dtrain::mnist::load_mnist(options.data_dir, "t10k");

  torch::manual_seed(options.seed);
  dtrain::mnist::MnistNet model;
  const double lr = options.learning_rate > 0 ? options.learning_rate : 0.000125 * size;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(lr));
  dt::DistributedOptimizer optimizer(adam, model->named_parameters().pairs());

  dt::TrainingProgress progress;
  std::optional<dt::Checkpointer> checkpointer;
  if (!options.checkpoint_dir.empty()) checkpointer.emplace(options.checkpoint_dir, 3);
  if (options.resume) {
    if (!checkpointer) throw dtrain::Error("dtrain-mnist: --resume needs --checkpoint-dir");
    if (auto restored = checkpointer->restore(*model, adam)) {
      progress = *restored;
      if (rank == 0) std::printf("Resumed from step %lld (epoch %lld)\n", static_cast<long long>(progress.step),
                                 static_cast<long long>(progress.epoch));
    } else if (rank == 0) {
      std::printf("No checkpoint in %s; starting fresh\n", options.checkpoint_dir.c_str());
    }
  }
  // Start every rank from rank 0's weights and optimizer state.
  dt::broadcast_parameters(dt::named_state(*model), 0);
  dt::broadcast_optimizer_state(adam, 0);
  // Dropout differs per rank and per resumption point.
  torch::manual_seed(options.seed + 1000 * static_cast<std::uint64_t>(rank) + static_cast<std::uint64_t>(progress.step));

  dt::DistributedSampler sampler(static_cast<std::size_t>(train_set.images.size(0)), size, rank, true, options.seed);
  const auto steps_per_epoch =
      static_cast<std::int64_t>((sampler.num_samples() + options.batch_size - 1) / options.batch_size);
  const std::int64_t total_steps =
      options.max_steps > 0 ? std::min(options.max_steps, steps_per_epoch * options.epochs) : steps_per_epoch * options.epochs;
  if (rank == 0) {
    std::printf("Training on %d ranks: batch %lld per rank, learning rate %g, %lld steps per epoch, %lld steps\n",
                size, static_cast<long long>(options.batch_size), lr, static_cast<long long>(steps_per_epoch),
                static_cast<long long>(total_steps));
    std::fflush(stdout);
  }

  model->train();
  auto window_start = Clock::now();
  std::int64_t window_steps = 0;
  const auto started = Clock::now();
  const std::int64_t first_step = progress.step;
  while (progress.step < total_steps) {
    const std::int64_t epoch = progress.step / steps_per_epoch;
    sampler.set_epoch(epoch);
    const auto indices = sampler.indices();
    for (std::int64_t b = progress.step % steps_per_epoch; b < steps_per_epoch && progress.step < total_steps; ++b) {
      const std::size_t begin = static_cast<std::size_t>(b * options.batch_size);
      const std::size_t end = std::min(indices.size(), begin + static_cast<std::size_t>(options.batch_size));
      std::vector<std::int64_t> batch(indices.begin() + begin, indices.begin() + end);
      const at::Tensor index = at::tensor(batch, at::kLong);
      const at::Tensor images = train_set.images.index_select(0, index);
      const at::Tensor labels = train_set.labels.index_select(0, index);

      optimizer.zero_grad();
      const at::Tensor loss = torch::nn::functional::nll_loss(model->forward(images), labels);
      loss.backward();
      optimizer.step();
      ++progress.step;
      ++window_steps;
      progress.epoch = progress.step / steps_per_epoch;

      if (progress.step % options.log_every == 0 || progress.step == total_steps) {
        const double average_loss = dt::metric_average(loss.item<double>(), "train.loss");
        const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
        const double images_per_second = static_cast<double>(window_steps * options.batch_size * size) / seconds;
        const double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
        const double eta = elapsed / static_cast<double>(progress.step - first_step) *
                           static_cast<double>(total_steps - progress.step);
        if (rank == 0) {
          std::printf("Step #%lld\tLoss: %.6f\timages/s: %.1f\tETA: %.0f s\n", static_cast<long long>(progress.step),
                      average_loss, images_per_second, eta);
          std::fflush(stdout);
        }
        window_start = Clock::now();
        window_steps = 0;
      }
      const bool epoch_end = progress.step % steps_per_epoch == 0 || progress.step == total_steps;
      if (checkpointer && ((options.checkpoint_every > 0 && progress.step % options.checkpoint_every == 0) || epoch_end)) {
        checkpointer->save(*model, adam, progress);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  const double accuracy = test_accuracy(model, test_set);
  if (rank == 0) {
    std::printf("Trained %lld steps in %.1f s (%.1f images/s)\n", static_cast<long long>(progress.step - first_step),
                seconds, static_cast<double>((progress.step - first_step) * options.batch_size * size) / seconds);
    std::printf("Test accuracy: %.4f\n", accuracy);
    std::fflush(stdout);
  }
  write_model(model, options, accuracy);
  dtrain::shutdown();
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
  app.add_option("--learning-rate,--lr", options.learning_rate, "Adam learning rate (default 0.000125 x ranks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--data-dir", options.data_dir, "Directory with the MNIST idx files");
  app.add_option("--model-dir", options.model_dir, "Where rank 0 writes model.pt and model.json");
  app.add_option("--checkpoint-dir", options.checkpoint_dir, "Where rank 0 writes checkpoints");
  app.add_option("--checkpoint-every", options.checkpoint_every, "Checkpoint every N steps (0: each epoch end)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--resume", options.resume, "Continue from the newest checkpoint in --checkpoint-dir");
  app.add_option("--seed", options.seed, "Seed shared by all ranks");
  app.add_option("--threads", options.threads, "LibTorch threads per rank (0: cores / local ranks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-every", options.log_every, "Print the loss every N steps")->check(CLI::PositiveNumber);
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
    return train(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-mnist: %s\n", e.what());
    return 1;
  }
}
