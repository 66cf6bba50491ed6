// PowerSGD in DistributedOptimizer across real processes (ctest runs it under `dtrain run -np 2`
// and `-np 3`). Each rank's gradient is a matrix chosen per rank, so the exact average is known.
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include <limits>

#include "dtrain/torch.h"
#include "tests/support/error_of.h"

namespace dtrain::libtorch {
namespace {

using dtrain::testing::error_of;

// Rank r's gradient of a rows x columns parameter: a fixed matrix of rank at most
// `rank_of_each` (and at most 2: rows of cosines are combinations of two), different per rank.
at::Tensor gradient_of_rank(int r, std::int64_t rows, std::int64_t columns, std::int64_t rank_of_each) {
  const at::Tensor left = at::cos(at::arange(rows * rank_of_each, at::kDouble).reshape({rows, rank_of_each}) + r);
  const at::Tensor right =
      at::sin(at::arange(rank_of_each * columns, at::kDouble).reshape({rank_of_each, columns}) * (r + 2));
  return left.matmul(right);
}

at::Tensor exact_average(std::int64_t rows, std::int64_t columns, std::int64_t rank_of_each) {
  at::Tensor sum = at::zeros({rows, columns}, at::kDouble);
  for (int r = 0; r < size(); ++r) sum += gradient_of_rank(r, rows, columns, rank_of_each);
  return sum / size();
}

// A parameter whose gradient is exactly this rank's chosen matrix, reduced by a
// DistributedOptimizer with PowerSGD.
struct Reduced {
  at::Tensor weight;
  at::Tensor bias;
  torch::optim::SGD sgd;
  DistributedOptimizer optimizer;
  at::Tensor input;
  at::Tensor bias_input;

  Reduced(std::int64_t rows, std::int64_t columns, std::int64_t rank_of_each, PowerSgdOptions power_sgd,
          const std::string& prefix, std::int64_t min_bytes = 0)
      : weight(at::zeros({rows, columns}, at::kDouble).requires_grad_()),
        bias(at::zeros({rows}, at::kDouble).requires_grad_()),
        sgd(std::vector<at::Tensor>{weight, bias}, 0.0),
        optimizer(sgd, {{"weight", weight}, {"bias", bias}}, options(power_sgd, prefix, min_bytes)),
        input(gradient_of_rank(rank(), rows, columns, rank_of_each)),
        bias_input(at::arange(rows, at::kDouble) * (rank() + 1)) {}

  static DistributedOptimizerOptions options(PowerSgdOptions power_sgd, const std::string& prefix,
                                             std::int64_t min_bytes) {
    DistributedOptimizerOptions options;
    options.power_sgd = power_sgd;
    options.name_prefix = prefix;
    options.compression_min_bytes = min_bytes;
    return options;
  }

  // One step; returns the reduced weight gradient.
  at::Tensor step() {
    optimizer.zero_grad();
    ((weight * input).sum() + (bias * bias_input).sum()).backward();
    optimizer.synchronize();
    at::Tensor reduced = weight.grad().clone();
    optimizer.step();
    return reduced;
  }
};

PowerSgdOptions rank_of(int r) {
  PowerSgdOptions options;
  options.rank = r;
  options.min_compression_rate = 0;  // compress even where the factors save little
  return options;
}

TEST(PowerSgd, ARankAsLargeAsTheMatrixReducesExactly) {
  // Factors of rank 4 span a 4 x 6 matrix: one power iteration recovers the average.
  Reduced reduced(4, 6, 3, rank_of(4), "full.");
  EXPECT_TRUE(reduced.step().allclose(exact_average(4, 6, 3), 0, 1e-9));
}

TEST(PowerSgd, ErrorFeedbackMakesTheApproximationsAverageOut) {
  // Rank-1 factors of a rank-2 average: each step's gradient is off, but what one step leaves
  // out is added to the next, so the mean over the steps approaches the true average.
  const at::Tensor exact = exact_average(8, 6, 2);
  for (bool feedback : {true, false}) {
    PowerSgdOptions options = rank_of(1);
    options.error_feedback = feedback;
    Reduced reduced(8, 6, 2, options, feedback ? "feedback." : "no_feedback.");
    at::Tensor sum = at::zeros_like(exact);
    const int steps = 40;
    for (int step = 0; step < steps; ++step) sum += reduced.step();
    const double off = ((sum / steps - exact).norm() / exact.norm()).item<double>();
    if (feedback) {
      EXPECT_LT(off, 0.05);
    } else {
      EXPECT_GT(off, 0.05);  // a rank-1 view of a rank-2 matrix stays a rank-1 view
    }
  }
}

TEST(PowerSgd, VectorsAndSmallMatricesAndEarlyStepsTravelWhole) {
  PowerSgdOptions options = rank_of(1);
  options.start_step = 2;
  // 8 x 6 float64 is 384 bytes: under the threshold the matrix is averaged exactly too.
  Reduced small(8, 6, 2, options, "small.", /*min_bytes=*/385);
  Reduced large(8, 6, 2, options, "large.", /*min_bytes=*/384);
  const at::Tensor exact = exact_average(8, 6, 2);
  for (int step = 0; step < 3; ++step) {
    EXPECT_TRUE(small.step().allclose(exact, 0, 1e-12)) << step;
    const bool compressed = step >= options.start_step;
    EXPECT_EQ(large.step().allclose(exact, 0, 1e-6), !compressed) << step;
    // On the wire: the 8-value bias, and the 8 x 6 matrix whole or as 8 + 6 values of rank 1.
    EXPECT_EQ(large.optimizer.reduced_bytes(), (8 + (compressed ? 8 + 6 : 8 * 6)) * 8) << step;
    // The bias, a vector, is always averaged exactly.
    EXPECT_TRUE(large.bias.grad().allclose(at::arange(8, at::kDouble) * (size() + 1) / 2.0, 0, 1e-12)) << step;
  }
}

// A float16 loss scale set too high overflows a gradient now and then: the step shows it (the
// loss scaler skips it), and the next steps are finite again rather than poisoned by the error
// and the warm-started Q of the overflowed one.
TEST(PowerSgd, AnOverflowedStepLeavesTheNextOnesFinite) {
  Reduced reduced(8, 6, 2, rank_of(2), "overflow.");
  reduced.step();
  const at::Tensor finite_input = reduced.input;
  if (rank() == 0) reduced.input = at::full_like(finite_input, std::numeric_limits<double>::infinity());
  EXPECT_FALSE(reduced.step().isfinite().all().item<bool>());
  reduced.input = finite_input;
  for (int step = 0; step < 3; ++step) EXPECT_TRUE(reduced.step().isfinite().all().item<bool>()) << step;
}

TEST(PowerSgd, EveryRankGetsTheSameApproximation) {
  Reduced reduced(10, 7, 3, rank_of(2), "same.");
  reduced.step();
  const at::Tensor mine = reduced.step().reshape({1, -1});
  const at::Tensor everyone = allgather(mine, "same.check");
  for (int r = 1; r < size(); ++r) EXPECT_TRUE(everyone[r].equal(everyone[0])) << r;
}

TEST(PowerSgd, RefusesWhatItDoesNotCombineWith) {
  at::Tensor w = at::zeros({4, 4}).requires_grad_();
  torch::optim::SGD sgd(std::vector<at::Tensor>{w}, 0.1);
  DistributedOptimizerOptions options;
  options.power_sgd.rank = 1;
  options.op = ReduceOp::kSum;
  EXPECT_NE(error_of([&] {
              DistributedOptimizer(sgd, {{"w", w}}, options);
            }).find("does not combine with"),
            std::string::npos);
  options.op = ReduceOp::kAverage;
  options.compression = Compression::kBf16;
  EXPECT_NE(error_of([&] {
              DistributedOptimizer(sgd, {{"w", w}}, options);
            }).find("does not combine with"),
            std::string::npos);
}

}  // namespace
}  // namespace dtrain::libtorch
