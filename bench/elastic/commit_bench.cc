// dtrain-bench-elastic-commit: what one TorchState::save() costs, and its parts, on the MNIST
// network with Adam (after a step, so Adam's moments exist), in one process.
//
//   build/apps/dtrain-bench-elastic-commit [--repeat N]
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/serialize/output-archive.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "dtrain/torch.h"
#include "mnist/mnist_net.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename Fn>
double milliseconds_per_call(int repeat, Fn&& fn) {
  fn();  // warm: buffers allocated
  const auto start = Clock::now();
  for (int i = 0; i < repeat; ++i) fn();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / repeat;
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 50;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--repeat") repeat = std::stoi(argv[i + 1]);
  }
  namespace dt = dtrain::libtorch;
  dt::set_num_threads(1);
  torch::manual_seed(0);
  dtrain::mnist::MnistNet model;
  torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
  const at::Tensor images = torch::randn({128, 1, 28, 28});
  const at::Tensor labels = torch::randint(0, 10, {128}, at::kLong);
  auto step = [&] {
    adam.zero_grad();
    torch::nn::functional::nll_loss(model->forward(images), labels).backward();
    adam.step();
  };
  step();
  dt::TorchState state(*model, adam);
  std::size_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += static_cast<std::size_t>(p.numel());

  const double save_ms = milliseconds_per_call(repeat, [&] { state.save(); });
  const double optimizer_ms = milliseconds_per_call(repeat, [&] {
    torch::serialize::OutputArchive archive;
    adam.save(archive);
    std::ostringstream out;
    archive.save_to(out);
  });
  const double step_ms = milliseconds_per_call(10, step);
  std::printf("MNIST network, %zu parameters, Adam, 1 thread, batch 128\n", parameters);
  std::printf("TorchState::save()        %8.2f ms  (of it the optimizer's archive %.2f ms)\n", save_ms, optimizer_ms);
  std::printf("one training step         %8.2f ms  -> a commit every K steps costs %.1f%% / K\n", step_ms,
              100.0 * save_ms / step_ms);
  return 0;
}
