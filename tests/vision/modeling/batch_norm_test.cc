// BatchNorm's synchronized form against LibTorch's own batch norm: with a
// cross-rank sum that sees only this process it must normalise, update the
// running statistics and differentiate exactly as at::batch_norm does, and
// with two ranks holding halves of a batch it must give what one rank with
// the whole batch gives (simulated here: each "rank" is handed the other's
// local statistics).
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "vision/modeling/batch_norm.h"

namespace dtrain::vision::modeling {
namespace {

struct Result {
  at::Tensor output, input_grad, weight_grad, running_mean, running_var;
};

Result run(BatchNorm& norm, const at::Tensor& input, const at::Tensor& upstream) {
  at::Tensor x = input.clone().requires_grad_(true);
  at::Tensor y = norm->forward(x);
  (y * upstream).sum().backward();
  auto parameters = norm->named_parameters();
  return {y.detach(), x.grad(), parameters["weight"].grad().clone(), norm->named_buffers()["running_mean"].clone(),
          norm->named_buffers()["running_var"].clone()};
}

BatchNorm ordinary(int64_t channels) {
  BatchNorm norm(channels, /*frozen=*/false);
  torch::NoGradGuard no_grad;
  norm->named_parameters()["weight"].copy_(torch::linspace(0.5, 1.5, channels, torch::kFloat64));
  norm->named_parameters()["bias"].copy_(torch::linspace(-0.2, 0.3, channels, torch::kFloat64));
  return norm;
}

TEST(BatchNorm, SynchronizedOverOneProcessIsOrdinaryBatchNorm) {
  torch::manual_seed(5);
  const at::Tensor input = torch::randn({3, 4, 5, 6}, torch::kFloat64) * 2 + 1;
  const at::Tensor upstream = torch::randn({3, 4, 5, 6}, torch::kFloat64);
  BatchNorm plain = ordinary(4), synced = ordinary(4);
  plain->to(torch::kFloat64);
  synced->to(torch::kFloat64);
  synced->synchronize_statistics([](const at::Tensor& local) { return local * 1; });
  const Result a = run(plain, input, upstream), b = run(synced, input, upstream);
  EXPECT_TRUE(torch::allclose(a.output, b.output, 1e-10, 1e-12));
  EXPECT_TRUE(torch::allclose(a.input_grad, b.input_grad, 1e-10, 1e-12));
  EXPECT_TRUE(torch::allclose(a.weight_grad, b.weight_grad, 1e-10, 1e-12));
  EXPECT_TRUE(torch::allclose(a.running_mean, b.running_mean, 1e-10, 1e-12));
  EXPECT_TRUE(torch::allclose(a.running_var, b.running_var, 1e-10, 1e-12)) << "unbiased running variance";
}

TEST(BatchNorm, TwoRanksWithHalvesNormaliseAsOneRankWithTheWholeBatch) {
  torch::manual_seed(6);
  const at::Tensor input = torch::randn({4, 3, 5, 5}, torch::kFloat64) * 3 - 1;
  BatchNorm whole = ordinary(3);
  whole->to(torch::kFloat64);
  const at::Tensor expected = whole->forward(input).detach();

  // Rank 0 holds images 0-1, rank 1 images 2-3; each rank's sum adds the other's statistics.
  std::vector<at::Tensor> halves = input.split(2, 0);
  auto local_statistics = [](const at::Tensor& x) {
    return torch::cat({x.sum({0, 2, 3}), (x * x).sum({0, 2, 3}),
                       torch::full({1}, static_cast<double>(x.numel() / x.size(1)), x.options())});
  };
  for (int rank = 0; rank < 2; ++rank) {
    BatchNorm norm = ordinary(3);
    norm->to(torch::kFloat64);
    const at::Tensor other = local_statistics(halves[1 - rank]);
    norm->synchronize_statistics([other](const at::Tensor& local) { return local + other; });
    const at::Tensor mine = norm->forward(halves[rank]).detach();
    EXPECT_TRUE(torch::allclose(mine, expected.split(2, 0)[rank], 1e-10, 1e-12)) << "rank " << rank;
    EXPECT_TRUE(
        torch::allclose(norm->named_buffers()["running_var"], whole->named_buffers()["running_var"], 1e-10, 1e-12));
  }
}

TEST(BatchNorm, FrozenStatisticsCannotBeSynchronized) {
  BatchNorm frozen(3, /*frozen=*/true);
  EXPECT_THROW(frozen->synchronize_statistics([](const at::Tensor& t) { return t; }), std::invalid_argument);
}

}  // namespace
}  // namespace dtrain::vision::modeling
