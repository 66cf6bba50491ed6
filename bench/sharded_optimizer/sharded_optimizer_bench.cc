// dtrain-bench-sharded-optimizer: what sharding the optimizer state (ZeRO 1 and 2) saves and
// costs on torchvision's ResNet-50 classifier (25.6 M parameters) with Adam. Run under
// `dtrain run -np N`; every rank trains the same steps on its own random images, and rank 0
// prints one JSON line: the Adam state and the gradients each rank holds after a step (the
// largest over ranks, in bytes) and the median step time (forward, backward, reduction, step
// and the parameters' allgather) with its range.
//
//   dtrain run -np 2 -- build/apps/dtrain-bench-sharded-optimizer --sharding none|optimizer_state|gradients
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "dtrain/torch.h"
#include "vision/modeling/resnet.h"

namespace {

namespace dt = dtrain::libtorch;
using Clock = std::chrono::steady_clock;

// ResNet-50 as torchvision's classifier: the body, global average pooling and a 1000-way layer.
struct ClassifierImpl : torch::nn::Module {
  dtrain::vision::modeling::ResNet body{nullptr};
  torch::nn::Linear head{nullptr};
  ClassifierImpl() {
    body = register_module("body", dtrain::vision::modeling::ResNet(50, /*frozen_norm=*/false));
    head = register_module("fc", torch::nn::Linear(2048, 1000));
  }
  at::Tensor forward(const at::Tensor& images) { return head(body->forward(images).back().mean({2, 3})); }
};
TORCH_MODULE(Classifier);

std::int64_t adam_state_bytes(torch::optim::Optimizer& optimizer) {
  std::int64_t bytes = 0;
  for (const auto& [key, state] : optimizer.state()) {
    const auto& adam = static_cast<const torch::optim::AdamParamState&>(*state);
    for (const at::Tensor& t : {adam.exp_avg(), adam.exp_avg_sq(), adam.max_exp_avg_sq()}) {
      if (t.defined()) bytes += static_cast<std::int64_t>(t.nbytes());
    }
  }
  return bytes;
}

std::int64_t gradient_bytes(torch::nn::Module& model) {
  std::int64_t bytes = 0;
  for (const auto& p : model.parameters()) {
    if (p.grad().defined()) bytes += static_cast<std::int64_t>(p.grad().nbytes());
  }
  return bytes;
}

std::int64_t largest_over_ranks(std::int64_t value, const std::string& name) {
  at::Tensor t = at::tensor({value});
  dt::allreduce_(t, name, {dtrain::ReduceOp::kMax});
  return t.item<std::int64_t>();
}

dtrain::libtorch::Sharding parse_sharding(const std::string& text) {
  if (text == "none") return dt::Sharding::kNone;
  if (text == "optimizer_state") return dt::Sharding::kOptimizerState;
  if (text == "gradients") return dt::Sharding::kGradients;
  throw std::invalid_argument("--sharding must be none, optimizer_state or gradients, got '" + text + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::string sharding = "none";
  int steps = 6, batch = 2, image = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--sharding")
      sharding = argv[i + 1];
    else if (flag == "--steps")
      steps = std::stoi(argv[i + 1]);
    else if (flag == "--batch")
      batch = std::stoi(argv[i + 1]);
    else if (flag == "--image")
      image = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  dtrain::init();
  dt::set_num_threads(1);
  dt::retain_freed_memory();  // as the training apps do: large blocks reused, not faulted in anew
  torch::manual_seed(0);
  Classifier model;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  dt::DistributedOptimizerOptions options;
  options.sharding = parse_sharding(sharding);
  dt::DistributedOptimizer optimizer(adam, model->named_parameters().pairs(), options);

  torch::manual_seed(1 + dtrain::rank());
  const at::Tensor images = torch::randn({batch, 3, image, image});
  const at::Tensor labels = torch::randint(0, 1000, {batch}, at::kLong);
  std::vector<double> step_ms;
  for (int step = 0; step < steps + 1; ++step) {  // the first step (allocations, state) is not timed
    const auto start = Clock::now();
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(images), labels).backward();
    optimizer.step();
    if (step > 0) step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  const std::int64_t state = largest_over_ranks(adam_state_bytes(adam), "bench.state_bytes");
  const std::int64_t grads = largest_over_ranks(gradient_bytes(*model), "bench.gradient_bytes");
  std::sort(step_ms.begin(), step_ms.end());
  if (dtrain::rank() == 0) {
    std::printf(
        "{\"sharding\": \"%s\", \"ranks\": %d, \"adam_state_bytes\": %lld, \"gradient_bytes\": %lld, "
        "\"step_ms_median\": %.1f, \"step_ms_min\": %.1f, \"step_ms_max\": %.1f}\n",
        sharding.c_str(), dtrain::size(), static_cast<long long>(state), static_cast<long long>(grads),
        step_ms[step_ms.size() / 2], step_ms.front(), step_ms.back());
  }
  dtrain::shutdown();
  return 0;
}
