// Collectives with gradients across real processes (ctest runs it under `dtrain run -np 2`
// and `-np 3`). Each test holds the distributed forward and backward against the same
// computation done in one process: every rank rebuilds all ranks' inputs, stands in for the
// collective with local tensor operations, and backpropagates the sum of all ranks' losses.
// Its own input's gradient there is what the distributed backward must deliver.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

using Shape = std::vector<std::int64_t>;
using Tensors = std::vector<at::Tensor>;

at::Tensor input_of(int r, const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t d : shape) count *= d;
  return at::arange(count, at::kDouble).reshape(shape).mul(0.1).add(r);
}

// Different on every rank and not linear, so each gradient depends on the rank and on the output.
at::Tensor loss_of_rank(int r, const at::Tensor& output) {
  const at::Tensor weights = at::arange(output.numel(), at::kDouble).reshape(output.sizes()).add(r + 1);
  return (output * output * weights).sum();
}

struct OneProcess {
  at::Tensor output;    // this rank's output
  at::Tensor gradient;  // of this rank's input, under the sum of all ranks' losses
};

OneProcess in_one_process(const std::function<Shape(int)>& shape_of,
                          const std::function<Tensors(const Tensors&)>& outputs_of_every_rank) {
  Tensors inputs;
  for (int r = 0; r < size(); ++r) inputs.push_back(input_of(r, shape_of(r)).requires_grad_());
  const Tensors outputs = outputs_of_every_rank(inputs);
  at::Tensor total = at::zeros({}, at::kDouble);
  for (int r = 0; r < size(); ++r) total = total + loss_of_rank(r, outputs[r]);
  total.backward();
  const at::Tensor gradient = inputs[rank()].grad();
  return {outputs[rank()].detach(), gradient.defined() ? gradient : at::zeros_like(inputs[rank()])};
}

void expect_as_in_one_process(const std::function<Shape(int)>& shape_of,
                              const std::function<Tensors(const Tensors&)>& outputs_of_every_rank,
                              const std::function<at::Tensor(const at::Tensor&)>& collective) {
  const at::Tensor input = input_of(rank(), shape_of(rank())).requires_grad_();
  const at::Tensor output = collective(input);
  loss_of_rank(rank(), output).backward();
  const OneProcess expected = in_one_process(shape_of, outputs_of_every_rank);
  ASSERT_EQ(output.sizes(), expected.output.sizes());
  EXPECT_TRUE(output.detach().allclose(expected.output)) << output << expected.output;
  ASSERT_TRUE(input.grad().defined());
  ASSERT_EQ(input.grad().sizes(), expected.gradient.sizes());
  EXPECT_TRUE(input.grad().allclose(expected.gradient)) << input.grad() << expected.gradient;
}

Tensors same_for_every_rank(const at::Tensor& output) { return Tensors(size(), output); }

at::Tensor sum_of(const Tensors& tensors) {
  at::Tensor sum = tensors[0];
  for (std::size_t r = 1; r < tensors.size(); ++r) sum = sum + tensors[r];
  return sum;
}

TEST(CollectivesWithGradient, AllreduceSumAndAverage) {
  auto shape = [](int) { return Shape{2, 3}; };
  expect_as_in_one_process(
      shape, [](const Tensors& x) { return same_for_every_rank(sum_of(x)); },
      [](const at::Tensor& x) { return allreduce_with_gradient(x, "grad.allreduce.sum"); });
  expect_as_in_one_process(
      shape, [](const Tensors& x) { return same_for_every_rank(sum_of(x) / size()); },
      [](const at::Tensor& x) { return allreduce_with_gradient(x, "grad.allreduce.avg", ReduceOp::kAverage); });
}

TEST(CollectivesWithGradient, AllgatherOfDifferentRowCounts) {
  expect_as_in_one_process(
      [](int r) {
        return Shape{r + 1, 2};
      },
      [](const Tensors& x) { return same_for_every_rank(at::cat(x)); },
      [](const at::Tensor& x) { return allgather_with_gradient(x, "grad.allgather"); });
}

TEST(CollectivesWithGradient, BroadcastFromTheLastRank) {
  const int root = size() - 1;
  expect_as_in_one_process([](int) { return Shape{3}; },
                           [root](const Tensors& x) { return same_for_every_rank(x[root]); },
                           [root](const at::Tensor& x) { return broadcast_with_gradient(x, root, "grad.broadcast"); });
}

// Rank r sends (r + j) % 2 + 1 rows to rank j.
std::int64_t rows_from_to(int r, int j) { return (r + j) % 2 + 1; }

TEST(CollectivesWithGradient, AlltoallOfUnevenSplits) {
  auto shape = [](int r) {
    std::int64_t rows = 0;
    for (int j = 0; j < size(); ++j) rows += rows_from_to(r, j);
    return Shape{rows, 2};
  };
  auto exchange_in_one_process = [](const Tensors& x) {
    Tensors outputs;
    for (int j = 0; j < size(); ++j) {
      Tensors received;
      for (int r = 0; r < size(); ++r) {
        std::int64_t offset = 0;
        for (int k = 0; k < j; ++k) offset += rows_from_to(r, k);
        received.push_back(x[r].narrow(0, offset, rows_from_to(r, j)));
      }
      outputs.push_back(at::cat(received));
    }
    return outputs;
  };
  std::vector<std::int64_t> received_splits;
  expect_as_in_one_process(shape, exchange_in_one_process, [&](const at::Tensor& x) {
    std::vector<std::int64_t> splits;
    for (int j = 0; j < size(); ++j) splits.push_back(rows_from_to(rank(), j));
    auto [received, splits_received] = alltoall_with_gradient(x, "grad.alltoall", splits);
    received_splits = splits_received;
    return received;
  });
  std::vector<std::int64_t> expected_splits;
  for (int r = 0; r < size(); ++r) expected_splits.push_back(rows_from_to(r, rank()));
  EXPECT_EQ(received_splits, expected_splits);
}

// Five rows do not split evenly over 2 or 3 ranks: the first ranks get one more.
TEST(CollectivesWithGradient, ReducescatterSumAndAverageOfUnevenRows) {
  auto scatter = [](const at::Tensor& reduced) {
    Tensors shards;
    std::int64_t start = 0;
    for (int r = 0; r < size(); ++r) {
      const std::int64_t rows = 5 / size() + (r < 5 % size() ? 1 : 0);
      shards.push_back(reduced.narrow(0, start, rows));
      start += rows;
    }
    return shards;
  };
  auto shape = [](int) { return Shape{5, 2}; };
  expect_as_in_one_process(
      shape, [&](const Tensors& x) { return scatter(sum_of(x)); },
      [](const at::Tensor& x) { return reducescatter_with_gradient(x, "grad.reducescatter.sum"); });
  expect_as_in_one_process(
      shape, [&](const Tensors& x) { return scatter(sum_of(x) / size()); },
      [](const at::Tensor& x) { return reducescatter_with_gradient(x, "grad.reducescatter.avg", ReduceOp::kAverage); });
}

TEST(CollectivesWithGradient, OnlySumAndAverageHaveAGradient) {
  try {
    allreduce_with_gradient(at::ones({2}), "grad.max", ReduceOp::kMax);
    ADD_FAILURE() << "allreduce_with_gradient accepted Max";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op must be Sum or Average"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::libtorch
