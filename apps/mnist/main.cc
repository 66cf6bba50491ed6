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

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "mnist/mnist_idx.h"
#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "mnist/mnist_net.h"
#include "mnist/mnist_tensors.h"

namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

struct Options {
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0: run every epoch to the end
  std::int64_t batch_size = 128;
  std::string optimizer = "adam";  // or "sgd" (momentum 0.5, Horovod's PyTorch example)
  double learning_rate = 0;  // 0: 0.000125 * size for Adam (the Keras tutorial), 0.01 * size for SGD
  std::string data_dir = "data/mnist";
  std::string model_dir;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;  // steps; 0: at the end of each epoch only
  bool resume = false;
  std::uint64_t seed = 42;
  int threads = 0;  // 0: the cores divided among this host's ranks
  std::int64_t log_every = 50;
  std::string distribution = "allreduce";  // or "ps"
};

bool parameter_servers(const Options& options) { return options.distribution == "ps"; }

// The learning rate scales with the number of ranks, as in the tutorials the example follows.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Options& options, dtrain::mnist::MnistNet& model,
                                                        int size) {
  if (options.optimizer == "sgd") {
    const double lr = options.learning_rate > 0 ? options.learning_rate : 0.01 * size;
    return std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.5));
  }
  const double lr = options.learning_rate > 0 ? options.learning_rate : 0.000125 * size;
  return std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(lr));
}

// Where this process sits: from the runtime, or (parameter servers) the launcher's environment.
struct Placement {
  int rank = 0, size = 1, local_size = 1;
};

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value && *value ? std::atoi(value) : fallback;
}

// `collective`: every rank scores a contiguous slice and the counts are summed; otherwise
// this process scores the whole set.
double test_accuracy(dtrain::mnist::MnistNet& model, const dtrain::mnist::MnistTensors& test, bool collective) {
  model->eval();
  torch::NoGradGuard no_grad;
  const std::int64_t n = test.images.size(0);
  const int rank = collective ? dtrain::rank() : 0, size = collective ? dtrain::size() : 1;
  const std::int64_t begin = n * rank / size, end = n * (rank + 1) / size;
  std::int64_t correct = 0;
  for (std::int64_t i = begin; i < end; i += 1000) {
    const std::int64_t j = std::min(end, i + 1000);
    const at::Tensor predicted = model->forward(test.images.slice(0, i, j)).argmax(1);
    correct += predicted.eq(test.labels.slice(0, i, j)).sum().item<std::int64_t>();
  }
  std::int64_t counts[2] = {correct, end - begin};
  if (collective) dtrain::allreduce("test.counts", {counts, dtrain::DataType::kInt64, {2}}, {counts, dtrain::DataType::kInt64, {2}},
                    {dtrain::ReduceOp::kSum});
  model->train();
  return static_cast<double>(counts[0]) / static_cast<double>(counts[1]);
}

void write_model(dtrain::mnist::MnistNet& model, const Options& options, int rank, double accuracy) {
  if (rank != 0 || options.model_dir.empty()) return;
  std::filesystem::create_directories(options.model_dir);
  torch::save(model, options.model_dir + "/model.pt");
  // What a server needs to know to load the weights.
  std::ofstream meta(options.model_dir + "/model.json");
  meta << "{\"kind\": \"mnist\", \"weights\": \"model.pt\", \"input\": [1, 28, 28], \"classes\": 10, "
       << "\"test_accuracy\": " << accuracy << "}\n";
}

int train(const Options& options) {
  const bool ps = parameter_servers(options);
  Placement placement;
  if (ps) {
    placement = {env_int("DTRAIN_RANK", 0), env_int("DTRAIN_SIZE", 1), env_int("DTRAIN_LOCAL_SIZE", 1)};
  } else {
    dtrain::init();
    placement = {dtrain::rank(), dtrain::size(), dtrain::local_size()};
  }
  const int rank = placement.rank, size = placement.size;
  const int threads =
      options.threads > 0 ? options.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / placement.local_size);
  dt::set_num_threads(threads);
  dt::pin_device();

  const auto train_set = dtrain::mnist::load_mnist(options.data_dir, "train");
  const auto test_set = dtrain::mnist::load_mnist(options.data_dir, "t10k");

  torch::manual_seed(options.seed);
  dtrain::mnist::MnistNet model;
  const auto owned_optimizer = make_optimizer(options, model, size);
  torch::optim::Optimizer& optimizer = *owned_optimizer;
  const double lr = optimizer.param_groups().front().options().get_lr();

  dt::TrainingProgress progress;
  std::optional<dt::Checkpointer> checkpointer;
  // Parameter-server workers do not use the runtime: rank 0 restores its checkpoint alone
  // and hands the servers its weights and step.
  if (!options.checkpoint_dir.empty()) checkpointer.emplace(options.checkpoint_dir, 3, ps ? rank : -1);
  if (options.resume) {
    if (!checkpointer) throw dtrain::Error("dtrain-mnist: --resume needs --checkpoint-dir");
    if (auto restored = checkpointer->restore(*model, optimizer)) {
      progress = *restored;
      if (rank == 0) std::printf("Resumed from step %lld (epoch %lld)\n", static_cast<long long>(progress.step),
                                 static_cast<long long>(progress.epoch));
    } else if (rank == 0) {
      std::printf("No checkpoint in %s; starting fresh\n", options.checkpoint_dir.c_str());
    }
  }
  std::optional<dt::DistributedOptimizer> allreduce;
  std::optional<dt::PSOptimizer> servers;
  if (ps) {
    servers.emplace(optimizer, model->named_parameters().pairs(), progress.step);
    progress.step = servers->start_step();
    if (rank == 0) {
      std::printf("Parameter servers: %s updates\n", servers->mode().c_str());
      std::fflush(stdout);
    }
  } else {
    allreduce.emplace(optimizer, model->named_parameters().pairs());
    // Start every rank from rank 0's weights and optimizer state.
    dt::broadcast_parameters(dt::named_state(*model), 0);
    dt::broadcast_optimizer_state(optimizer, 0);
  }
  auto zero_grad = [&] { ps ? servers->zero_grad() : allreduce->zero_grad(); };
  auto step = [&] { ps ? servers->step() : allreduce->step(); };
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

      zero_grad();
      const at::Tensor loss = torch::nn::functional::nll_loss(model->forward(images), labels);
      loss.backward();
      step();
      ++progress.step;
      ++window_steps;
      progress.epoch = progress.step / steps_per_epoch;

      if (progress.step % options.log_every == 0 || progress.step == total_steps) {
        // Parameter-server workers do not meet: the chief reports its own loss.
        const double average_loss = ps ? loss.item<double>() : dt::metric_average(loss.item<double>(), "train.loss");
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
        if (ps && rank == 0) servers->pull_parameters();  // every shard, as the servers hold it now
        checkpointer->save(*model, optimizer, progress);
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  if (ps) servers->finish();  // the chief waits for the others, then pulls the final weights
  if (ps && rank != 0) return 0;
  const double accuracy = test_accuracy(model, test_set, !ps);
  if (rank == 0) {
    std::printf("Trained %lld steps in %.1f s (%.1f images/s)\n", static_cast<long long>(progress.step - first_step),
                seconds, static_cast<double>((progress.step - first_step) * options.batch_size * size) / seconds);
    std::printf("Test accuracy: %.4f\n", accuracy);
    std::fflush(stdout);
  }
  write_model(model, options, rank, accuracy);
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
  app.add_option("--threads", options.threads, "LibTorch threads per rank (0: cores / local ranks)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--log-every", options.log_every, "Print the loss every N steps")->check(CLI::PositiveNumber);
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
    return train(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-mnist: %s\n", e.what());
    return 1;
  }
}
