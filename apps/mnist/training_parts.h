// What dtrain-mnist's two training loops share (main.cc: allreduce or parameter servers;
// elastic_training.cc: an elastic job): the options, the optimizer, the cores, batches,
// scoring and the model's files.
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/dtrain.h"
#include "mnist/mnist_net.h"
#include "mnist/mnist_tensors.h"

namespace dtrain::mnist_app {

struct Options {
  int epochs = 1;
  std::int64_t max_steps = 0;  // 0: run every epoch to the end
  std::int64_t batch_size = 128;
  std::string optimizer = "adam";  // or "sgd" (momentum 0.5, Horovod's PyTorch example)
  double learning_rate = 0;        // 0: 0.000125 * size for Adam (the Keras tutorial), 0.01 * size for SGD
  std::string data_dir = "data/mnist";
  std::string model_dir;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;  // steps; 0: at the end of each epoch only
  bool resume = false;
  std::uint64_t seed = 42;
  int threads = 0;  // 0: the cores divided among this host's ranks
  std::int64_t log_every = 50;
  std::string distribution = "allreduce";  // or "ps"
  bool elastic = false;                    // --elastic: under `dtrain run --min-np`, go on when workers change
  std::int64_t commit_every = 10;          // --commit-every: steps between elastic commits
  std::string device = "cpu";              // --device: cpu, or cuda (this rank's GPU, cuda:local_rank)
  int power_sgd_rank = 0;                  // --power-sgd-rank: gradients as low-rank factors (0: exact)
  std::int64_t power_sgd_start_step = 0;   // --power-sgd-start-step: exact steps before PowerSGD begins
};

// Adam (the Keras tutorial) or SGD with momentum 0.5 (Horovod's PyTorch example); the default
// learning rate scales with the number of ranks, as in the tutorials the example follows.
double default_learning_rate(const Options& options, int size);
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const Options& options, dtrain::mnist::MnistNet& model,
                                                        int size);

// Where the model and the data live: the CPU, or with --device cuda this rank's GPU (an Error
// if LibTorch has none).
at::Device training_device(const Options& options);

// The data sets on `device`, loaded once: MNIST fits in any GPU's memory, so a step gathers
// its batch there instead of copying it over every time.
dtrain::mnist::MnistTensors on_device(dtrain::mnist::MnistTensors set, const at::Device& device);

// LibTorch threads: --threads, or the cores divided among this host's ranks.
void use_cores(const Options& options, int local_size);

// The images and labels at positions [b * batch, (b + 1) * batch) of `indices`.
std::pair<at::Tensor, at::Tensor> batch_of(const dtrain::mnist::MnistTensors& set,
                                           const std::vector<std::size_t>& indices, std::int64_t b,
                                           std::int64_t batch_size);

// `collective`: every rank scores a contiguous slice and the counts are summed; otherwise
// this process scores the whole set.
double test_accuracy(dtrain::mnist::MnistNet& model, const dtrain::mnist::MnistTensors& test, bool collective);

// Rank 0 with a model directory: model.pt and model.json (what `dtrain serve` loads).
void write_model(dtrain::mnist::MnistNet& model, const Options& options, int rank, double accuracy);

}  // namespace dtrain::mnist_app
