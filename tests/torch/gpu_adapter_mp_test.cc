// The LibTorch adapter on CUDA tensors, across real processes: the same training on CPU and
// on each rank's GPU must end with the same weights, and collectives on CUDA tensors return
// CUDA tensors holding the CPU run's values. Skipped, saying why, where LibTorch has no CUDA
// (Debian's) or the runtime no GPU engines; scripts/gpu/test runs it on the GPU machine.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "dtrain/torch.h"

namespace dtrain {
namespace {

namespace dt = dtrain::libtorch;

#define REQUIRE_CUDA()                                                                                \
  if (!torch::cuda::is_available() || !dtrain::cuda_built()) {                                        \
    GTEST_SKIP() << "needs a LibTorch with CUDA, a GPU and a runtime with its GPU engines (LibTorch " \
                 << (torch::cuda::is_available() ? "sees a GPU" : "sees no GPU") << ", runtime "      \
                 << (dtrain::cuda_built() ? "has" : "lacks") << " them)";                             \
  }

at::Device my_gpu() {
  return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank() % torch::cuda::device_count()));
}

// 20 steps of SGD with momentum in float64 on `device`, each rank on its own batches; the
// parameters after, on the CPU.
std::vector<at::Tensor> train(const at::Device& device, const std::string& prefix) {
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  model->to(torch::kDouble);
  model->to(device);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  dt::DistributedOptimizerOptions options;
  options.name_prefix = prefix;
  dt::DistributedOptimizer optimizer(sgd, model->named_parameters().pairs(), options);
  for (int step = 0; step < 20; ++step) {
    torch::manual_seed(1000 * rank() + step);  // different data on every rank
    const at::Tensor x = torch::randn({32, 8}, torch::kDouble).to(device);
    const at::Tensor y = torch::randn({32, 4}, torch::kDouble).to(device);
    optimizer.zero_grad();
    torch::mse_loss(model->forward(x), y).backward();
    optimizer.step();
  }
  std::vector<at::Tensor> weights;
  for (const auto& p : model->parameters()) weights.push_back(p.detach().to(at::kCPU));
  return weights;
}

TEST(GpuAdapter, DistributedOptimizerOnCudaGivesTheCpuRunsWeights) {
  REQUIRE_CUDA();
  const auto on_cpu = train(at::kCPU, "cpu.grad.");
  const auto on_gpu = train(my_gpu(), "gpu.grad.");
  ASSERT_EQ(on_cpu.size(), on_gpu.size());
  for (std::size_t i = 0; i < on_cpu.size(); ++i) {
    EXPECT_TRUE(torch::allclose(on_cpu[i], on_gpu[i], 1e-9, 1e-12))
        << "parameter " << i << ": largest difference " << (on_cpu[i] - on_gpu[i]).abs().max().item<double>();
  }
  // And the replicas agree: rank 0's weights everywhere.
  for (std::size_t i = 0; i < on_gpu.size(); ++i) {
    at::Tensor from_root = on_gpu[i].to(my_gpu());
    dt::broadcast_(from_root, 0, "gpu.check." + std::to_string(i));
    EXPECT_TRUE(torch::equal(from_root.to(at::kCPU), on_gpu[i])) << "parameter " << i << " differs from rank 0's";
  }
}

TEST(GpuAdapter, CollectivesOnCudaTensorsStayOnTheGpu) {
  REQUIRE_CUDA();
  const at::Tensor mine = torch::arange(6, torch::kFloat).reshape({2, 3}) + rank();
  const at::Tensor summed = dt::allreduce(mine.to(my_gpu()), "gpu.adapter.sum", {ReduceOp::kSum});
  EXPECT_TRUE(summed.is_cuda());
  const double world = size();
  EXPECT_TRUE(torch::equal(summed.to(at::kCPU),
                           torch::arange(6, torch::kFloat).reshape({2, 3}) * world + world * (world - 1) / 2));
  const at::Tensor gathered = dt::allgather(mine.to(my_gpu()), "gpu.adapter.gather");
  EXPECT_TRUE(gathered.is_cuda());
  EXPECT_EQ(gathered.size(0), 2 * size());
  EXPECT_EQ(gathered[2 * (size() - 1)][0].item<float>(), static_cast<float>(size() - 1));
  // SyncBN's differentiable allreduce: the gradient comes back on the GPU too.
  at::Tensor x = mine.to(my_gpu()).requires_grad_(true);
  dt::allreduce_with_gradient(x, "gpu.adapter.autograd", ReduceOp::kSum).sum().backward();
  EXPECT_TRUE(x.grad().is_cuda());
  EXPECT_TRUE(torch::equal(x.grad().to(at::kCPU), torch::full({2, 3}, world)));
}

TEST(GpuAdapter, ACheckpointOfACudaModelRestoresOntoTheGpuAndTrainsOn) {
  REQUIRE_CUDA();
  const std::string directory = "/tmp/dtrain-gpu-checkpoint-" +
                                std::string(std::getenv("DTRAIN_JOB_ID") ? std::getenv("DTRAIN_JOB_ID") : "local");
  auto make = [&] {
    torch::manual_seed(3);
    torch::nn::Linear model(4, 2);
    model->to(my_gpu());
    return model;
  };
  auto step = [&](torch::nn::Linear& model, torch::optim::SGD& sgd) {
    sgd.zero_grad();
    model->forward(torch::ones({3, 4}, my_gpu())).sum().backward();
    sgd.step();
  };
  torch::nn::Linear saved = make();
  torch::optim::SGD saved_sgd(saved->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  step(saved, saved_sgd);  // momentum buffers now exist, on the GPU
  dt::Checkpointer checkpointer(directory, 1);
  checkpointer.save(*saved, saved_sgd, {0, 1});

  torch::nn::Linear restored = make();
  torch::optim::SGD restored_sgd(restored->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  ASSERT_TRUE(checkpointer.restore(*restored, restored_sgd).has_value());
  step(saved, saved_sgd);
  step(restored, restored_sgd);  // fails if the momentum came back on the CPU
  EXPECT_TRUE(restored->weight.is_cuda());
  EXPECT_TRUE(torch::equal(saved->weight, restored->weight));
  barrier();
  if (rank() == 0) {
    // File by file: std::filesystem::remove_all crashed in the GPU machine's build (LibTorch
    // 2.11 with a newer libstdc++), after everything above had passed.
    for (const std::string& file : checkpointer.list()) std::remove(file.c_str());
    rmdir(directory.c_str());
  }
}

}  // namespace
}  // namespace dtrain
