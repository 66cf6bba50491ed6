// One worker of the parameter-server vs allreduce benchmark (bench/ps/compare runs the
// matrix). Trains a model on random data for --steps steps after --warmup, through
// DistributedOptimizer (allreduce) or PSOptimizer (parameter servers, under
// `dtrain run --ps`), and prints its own throughput:
//
//   bench-ps: rank=R distribution=D model=M steps=N seconds=S samples_per_s=X
//
// Models: "mnist" (the example's network, 1.2 M parameters, Adam) and "box-head" (Mask R-CNN's
// box head: 12544->1024->1024 with the class and box predictors, 14 M parameters = 55 MB of
// gradient per step, SGD with momentum). --slow-rank R makes rank R sleep as long as each
// step took it, so it runs at half speed: the straggler case of the seeds' guidance.
#include <CLI/CLI.hpp>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "mnist/mnist_net.h"

namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string model = "mnist";
  std::string distribution = "allreduce";
  int steps = 60;
  int warmup = 5;
  int batch = 64;
  int slow_rank = -1;
};

int run(const Options& options) {
  const bool ps = options.distribution == "ps";
  if (!ps) dtrain::init();
  const int rank = ps ? dtrain::placement_from_environment().rank : dtrain::rank();
  dt::set_num_threads(1);
  torch::manual_seed(1);

  std::shared_ptr<torch::nn::Module> model;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::function<at::Tensor()> loss_of_batch;
  if (options.model == "mnist") {
    dtrain::mnist::MnistNet net;
    const at::Tensor images = torch::randn({options.batch, 1, 28, 28});
    const at::Tensor labels = torch::randint(0, 10, {options.batch}, at::kLong);
    loss_of_batch = [net, images, labels]() mutable {
      return torch::nn::functional::nll_loss(net->forward(images), labels);
    };
    optimizer = std::make_unique<torch::optim::Adam>(net->parameters(), torch::optim::AdamOptions(1e-4));
    model = net.ptr();
  } else {
    torch::nn::Sequential head(torch::nn::Linear(12544, 1024), torch::nn::ReLU(), torch::nn::Linear(1024, 1024),
                               torch::nn::ReLU(), torch::nn::Linear(1024, 91 + 91 * 4));
    const at::Tensor features = torch::randn({options.batch, 12544});
    const at::Tensor targets = torch::randn({options.batch, 91 + 91 * 4});
    loss_of_batch = [head, features, targets]() mutable { return torch::mse_loss(head->forward(features), targets); };
    optimizer = std::make_unique<torch::optim::SGD>(head->parameters(), torch::optim::SGDOptions(1e-3).momentum(0.9));
    model = head.ptr();
  }

  std::optional<dt::DistributedOptimizer> allreduce;
  std::optional<dt::PSOptimizer> servers;
  if (ps) {
    servers.emplace(*optimizer, model->named_parameters().pairs());
  } else {
    allreduce.emplace(*optimizer, model->named_parameters().pairs());
    dt::broadcast_parameters(dt::named_state(*model), 0);
  }

  Clock::time_point started;
  for (int step = 0; step < options.warmup + options.steps; ++step) {
    if (step == options.warmup) started = Clock::now();
    const auto step_start = Clock::now();
    ps ? servers->zero_grad() : allreduce->zero_grad();
    loss_of_batch().backward();
    ps ? servers->step() : allreduce->step();
    if (rank == options.slow_rank) std::this_thread::sleep_for(Clock::now() - step_start);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("bench-ps: rank=%d distribution=%s model=%s steps=%d seconds=%.3f samples_per_s=%.2f\n", rank,
              options.distribution.c_str(), options.model.c_str(), options.steps, seconds,
              options.steps * options.batch / seconds);
  std::fflush(stdout);
  if (ps) {
    servers->finish();
  } else {
    dtrain::shutdown();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"dtrain-bench-ps-worker: one worker of bench/ps/compare"};
  app.add_option("--model", options.model)->check(CLI::IsMember({"mnist", "box-head"}));
  app.add_option("--distribution", options.distribution)->check(CLI::IsMember({"allreduce", "ps"}));
  app.add_option("--steps", options.steps)->check(CLI::PositiveNumber);
  app.add_option("--warmup", options.warmup)->check(CLI::NonNegativeNumber);
  app.add_option("--batch", options.batch)->check(CLI::PositiveNumber);
  app.add_option("--slow-rank", options.slow_rank, "This rank sleeps as long as each step took it");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-ps-worker: %s\n", e.what());
    return 1;
  }
}
