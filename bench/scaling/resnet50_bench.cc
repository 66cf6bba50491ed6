// dtrain-bench-resnet50: the synthetic ResNet-50 benchmark Horovod publishes its scaling with
// (torchvision's resnet50, random 224x224 images and labels, batch 32 per rank, SGD), trained
// data-parallel through dtrain's DistributedOptimizer. Rank 0 prints the images/s of all ranks
// together. bench/scaling/resnet50 runs it beside PyTorch DDP (resnet50_ddp.py) on this machine.
//
//   dtrain run -np 2 -- dtrain-bench-resnet50 [--batch 32] [--warmup 2] [--steps 10] [--threads 1]
#include <CLI/CLI.hpp>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/init.h>
#include <torch/optim/sgd.h>

#include <cstdio>

#include "bench/scaling/timed_steps.h"
#include "dtrain/torch.h"

namespace {

torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// torchvision's Bottleneck (v1.5: the stride on the 3x3 convolution).
struct BottleneckImpl : torch::nn::Module {
  BottleneckImpl(std::int64_t in, std::int64_t width, std::int64_t stride) {
    const std::int64_t out = width * 4;
    conv1 = register_module("conv1", conv(in, width, 1, 1));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2 = register_module("conv2", conv(width, width, 3, stride));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3 = register_module("conv3", conv(width, out, 1, 1));
    bn3 = register_module("bn3", torch::nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      downsample =
          register_module("downsample", torch::nn::Sequential(conv(in, out, 1, stride), torch::nn::BatchNorm2d(out)));
    }
  }

  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = bn1(conv1(x)).relu_();
    y = bn2(conv2(y)).relu_();
    y = bn3(conv3(y));
    return (y + (downsample ? downsample->forward(x) : x)).relu_();
  }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, conv3{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, bn3{nullptr};
  torch::nn::Sequential downsample{nullptr};
};
TORCH_MODULE(Bottleneck);

struct ResNet50Impl : torch::nn::Module {
  ResNet50Impl() {
    stem = register_module("stem", torch::nn::Sequential(conv(3, 64, 7, 2), torch::nn::BatchNorm2d(64)));
    std::int64_t in = 64;
    const std::int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
    for (int stage = 0; stage < 4; ++stage) {
      torch::nn::Sequential layer;
      for (std::int64_t b = 0; b < blocks[stage]; ++b) {
        layer->push_back(Bottleneck(in, widths[stage], b == 0 && stage > 0 ? 2 : 1));
        in = widths[stage] * 4;
      }
      layers.push_back(register_module("layer" + std::to_string(stage + 1), layer));
    }
    fc = register_module("fc", torch::nn::Linear(2048, 1000));
    for (auto& module : modules(/*include_self=*/false)) {
      if (auto* c = module->as<torch::nn::Conv2d>()) {
        torch::nn::init::kaiming_normal_(c->weight, 0, torch::kFanOut, torch::kReLU);
      }
    }
  }

  at::Tensor forward(const at::Tensor& images) {
    at::Tensor x = at::max_pool2d(stem->forward(images).relu_(), 3, 2, 1);
    for (auto& layer : layers) x = layer->forward(x);
    return fc(x.mean({2, 3}));
  }

  torch::nn::Sequential stem{nullptr};
  std::vector<torch::nn::Sequential> layers;
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet50);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("dtrain-bench-resnet50: synthetic ResNet-50 training throughput under dtrain run");
  int batch = 32, warmup = 2, steps = 10, threads = 1;
  app.add_option("--batch", batch, "Images per rank per step")->check(CLI::PositiveNumber);
  app.add_option("--warmup", warmup, "Steps before the clock starts")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "Steps timed")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "LibTorch threads per rank")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  dtrain::init();
  namespace dt = dtrain::libtorch;
  dt::set_num_threads(threads);
  dt::retain_freed_memory();
  torch::manual_seed(42);
  ResNet50 model;
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01 * dtrain::size()).momentum(0.9));
  dt::DistributedOptimizer optimizer(sgd, model->named_parameters().pairs());
  dt::broadcast_parameters(dt::named_state(*model), 0);

  const at::Tensor images = at::randn({batch, 3, 224, 224});
  const at::Tensor labels = at::randint(0, 1000, {batch}, at::kLong);
  auto step = [&] {
    optimizer.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(images), labels).backward();
    optimizer.step();
  };
  const double seconds = dtrain::bench::seconds_for_steps(step, warmup, steps);
  if (dtrain::rank() == 0) {
    std::size_t parameters = 0;
    for (const auto& p : model->parameters()) parameters += static_cast<std::size_t>(p.numel());
    std::printf("resnet50 dtrain ranks=%d batch=%d threads=%d parameters=%zu steps=%d: %.2f images/s\n", dtrain::size(),
                batch, threads, parameters, steps, batch * dtrain::size() * steps / seconds);
  }
  dtrain::shutdown();
  return 0;
}
