// The LibTorch adapter across real processes (ctest runs it under `dtrain run -np 2` and
// `-np 3`, with and without tensor fusion). Every rank runs the same tests in order.
#include <gtest/gtest.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <memory>

#include "dtrain/torch.h"
#include "mnist/mnist_net.h"
#include "tests/support/error_of.h"

namespace dtrain::libtorch {
namespace {

using dtrain::testing::error_of;

// A gradient that differs per rank in a known way: d(sum(w * x))/dw = x = rank + 1.
at::Tensor rank_input(std::int64_t n) { return at::full({1, n}, static_cast<double>(rank() + 1), at::kFloat); }
double mean_of_ranks() { return (size() + 1) / 2.0; }

TEST(TensorCollectives, InPlaceOutOfPlaceAndAsync) {
  at::Tensor t = at::full({3, 2}, static_cast<double>(rank()), at::kDouble);
  const at::Tensor averaged = allreduce(t, "tc.avg");
  EXPECT_TRUE(averaged.allclose(at::full({3, 2}, (size() - 1) / 2.0, at::kDouble)));
  EXPECT_TRUE(t.equal(at::full({3, 2}, static_cast<double>(rank()), at::kDouble)));  // untouched
  auto h = allreduce_async_(t, "tc.sum", {ReduceOp::kSum});
  const at::Tensor summed = h.wait();
  EXPECT_TRUE(summed.is_same(t));
  EXPECT_EQ(t[0][0].item<double>(), size() * (size() - 1) / 2.0);

  const at::Tensor rows = at::full({rank() + 1, 2}, static_cast<float>(rank()));
  const at::Tensor gathered = allgather(rows, "tc.gather");
  EXPECT_EQ(gathered.size(0), size() * (size() + 1) / 2);
  at::Tensor b = at::full({4}, rank() == 1 ? 7.0 : 0.0, at::kLong);
  broadcast_(b, 1, "tc.bcast");
  EXPECT_EQ(b[3].item<std::int64_t>(), 7);
  const at::Tensor shard = reducescatter(at::ones({size() * 2, 3}), "tc.rs", {ReduceOp::kSum});
  EXPECT_TRUE(shard.equal(at::full({2, 3}, static_cast<float>(size()))));
}

TEST(TensorCollectives, AlltoallAsyncReportsReceivedSplits) {
  // Rank r sends (j + 1) rows of value 10 * r + j to rank j.
  std::vector<std::int64_t> splits(size());
  std::vector<at::Tensor> parts;
  for (int j = 0; j < size(); ++j) {
    splits[j] = j + 1;
    parts.push_back(at::full({j + 1, 2}, 10.0 * rank() + j));
  }
  auto h = alltoall_async(at::cat(parts), "tc.a2a", splits);
  const at::Tensor received = h.wait();
  EXPECT_EQ(h.received_splits(), std::vector<std::int64_t>(size(), rank() + 1));
  ASSERT_EQ(received.size(0), size() * (rank() + 1));
  for (int r = 0; r < size(); ++r) {
    EXPECT_EQ(received[r * (rank() + 1)][0].item<double>(), 10.0 * r + rank());
  }
}

TEST(DistributedOptimizer, AveragesGradientsAcrossRanks) {
  torch::nn::Linear layer(torch::nn::LinearOptions(5, 1).bias(false));
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs());
  optimizer.zero_grad();
  layer->forward(rank_input(5)).sum().backward();
  optimizer.synchronize();
  EXPECT_TRUE(layer->weight.grad().allclose(at::full({1, 5}, mean_of_ranks())));
}

// Two disjoint process sets, rank 0 alone and the others, each averaging its own members'
// gradients, with tensors and names they share.
TEST(ProcessSets, DistributedOptimizerAndCollectivesAverageOverTheSetOnly) {
  std::vector<int> others;
  for (int r = 1; r < size(); ++r) others.push_back(r);
  const ProcessSet first = add_process_set({0}), rest = add_process_set(others);
  const ProcessSet& mine = rank() == 0 ? first : rest;
  double mean_in_set = 0;  // of rank + 1 over the set's members
  for (int r : mine.ranks()) mean_in_set += (r + 1.0) / mine.size();

  torch::nn::Linear layer(torch::nn::LinearOptions(5, 1).bias(false));
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  DistributedOptimizerOptions options;
  options.process_set = mine;
  DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs(), options);
  optimizer.zero_grad();
  layer->forward(rank_input(5)).sum().backward();
  optimizer.synchronize();
  EXPECT_TRUE(layer->weight.grad().allclose(at::full({1, 5}, mean_in_set)));

  const at::Tensor summed = allreduce(at::full({2}, rank() + 1.0, at::kDouble), "ps.sum", {ReduceOp::kSum}, mine);
  EXPECT_EQ(summed[1].item<double>(), mean_in_set * mine.size());
  const at::Tensor gathered = allgather(at::full({1}, static_cast<float>(rank())), "ps.gather", mine);
  EXPECT_EQ(gathered.size(0), mine.size());
  at::Tensor from_last = at::full({2}, static_cast<double>(rank()));
  broadcast_(from_last, mine.ranks().back(), "ps.bcast", mine);
  EXPECT_EQ(from_last[0].item<double>(), mine.ranks().back());

  // Not a member: refused where the optimizer is made.
  DistributedOptimizerOptions elsewhere;
  elsewhere.process_set = rank() == 0 ? rest : first;
  EXPECT_NE(error_of([&] {
              DistributedOptimizer(sgd, layer->named_parameters().pairs(), elsewhere);
            }).find("does not include rank " + std::to_string(rank())),
            std::string::npos);
  remove_process_set(first);
  remove_process_set(rest);
}

TEST(DistributedOptimizer, SumOpAndPredivideFactor) {
  torch::nn::Linear a(torch::nn::LinearOptions(3, 1).bias(false)), b(torch::nn::LinearOptions(3, 1).bias(false));
  torch::optim::SGD sgd_a(a->parameters(), 1.0), sgd_b(b->parameters(), 1.0);
  DistributedOptimizerOptions sum;
  sum.op = ReduceOp::kSum;
  sum.name_prefix = "sum.";
  DistributedOptimizer summing(sgd_a, a->named_parameters().pairs(), sum);
  DistributedOptimizerOptions predivide;
  predivide.gradient_predivide_factor = 4.0;
  predivide.name_prefix = "predivide.";
  DistributedOptimizer predividing(sgd_b, b->named_parameters().pairs(), predivide);
  a->forward(rank_input(3)).sum().backward();
  b->forward(rank_input(3)).sum().backward();
  summing.synchronize();
  predividing.synchronize();
  EXPECT_TRUE(a->weight.grad().allclose(at::full({1, 3}, mean_of_ranks() * size())));
  EXPECT_TRUE(b->weight.grad().allclose(at::full({1, 3}, mean_of_ranks())));  // same average
}

TEST(DistributedOptimizer, AccumulatesBackwardPassesBeforeReducing) {
  torch::nn::Linear layer(torch::nn::LinearOptions(2, 1).bias(false));
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  DistributedOptimizerOptions options;
  options.backward_passes_per_step = 3;
  options.name_prefix = "accumulate.";
  DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs(), options);
  optimizer.zero_grad();
  for (int pass = 0; pass < 3; ++pass) layer->forward(rank_input(2)).sum().backward();
  optimizer.synchronize();
  EXPECT_TRUE(layer->weight.grad().allclose(at::full({1, 2}, 3 * mean_of_ranks())));
  // A fourth pass before step() is the misuse the option exists to catch.
  optimizer.zero_grad();
  for (int pass = 0; pass < 3; ++pass) layer->forward(rank_input(2)).sum().backward();
  const std::string message = error_of([&] { layer->forward(rank_input(2)).sum().backward(); });
  EXPECT_NE(message.find("backward_passes_per_step is 3"), std::string::npos) << message;
  optimizer.synchronize();
}

TEST(DistributedOptimizer, Fp16CompressionRestoresTheDtype) {
  torch::nn::Linear layer(torch::nn::LinearOptions(4, 1).bias(false));
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  DistributedOptimizerOptions options;
  options.compression = Compression::kFp16;
  options.name_prefix = "fp16.";
  DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs(), options);
  layer->forward(rank_input(4)).sum().backward();
  optimizer.synchronize();
  EXPECT_EQ(layer->weight.grad().scalar_type(), at::kFloat);
  EXPECT_TRUE(layer->weight.grad().allclose(at::full({1, 4}, mean_of_ranks())));
}

// float16 would turn these gradients into infinities; bfloat16 ones travel as they are.
TEST(DistributedOptimizer, Fp16CompressionLeavesBfloat16GradientsAlone) {
  at::Tensor weight = at::zeros({1, 2}, at::kBFloat16).requires_grad_();
  torch::optim::SGD sgd(std::vector<at::Tensor>{weight}, 1.0);
  DistributedOptimizerOptions options;
  options.compression = Compression::kFp16;
  options.name_prefix = "bf16.";
  DistributedOptimizer optimizer(sgd, {{"weight", weight}}, options);
  const double beyond_float16 = 1048576.0;  // 2^20; float16 ends at 65504
  (weight * rank_input(2).to(at::kBFloat16) * beyond_float16).sum().backward();
  optimizer.synchronize();
  EXPECT_EQ(weight.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(weight.grad().to(at::kDouble).equal(at::full({1, 2}, mean_of_ranks() * beyond_float16, at::kDouble)))
      << weight.grad();
}

// A gradient of (1 + 2^-10) * 2^20 on every rank: beyond float16's range, and a step finer
// than bfloat16's 8 significant bits, so it shows which dtype it travelled in.
at::Tensor averaged_fine_gradient(Compression compression, std::int64_t min_bytes, const std::string& prefix) {
  at::Tensor weight = at::zeros({1, 4}, at::kFloat).requires_grad_();
  torch::optim::SGD sgd(std::vector<at::Tensor>{weight}, 1.0);
  DistributedOptimizerOptions options;
  options.compression = compression;
  options.compression_min_bytes = min_bytes;
  options.name_prefix = prefix;
  DistributedOptimizer optimizer(sgd, {{"weight", weight}}, options);
  (weight * at::full({1, 4}, 1049600.0)).sum().backward();
  optimizer.synchronize();
  return weight.grad();
}

TEST(DistributedOptimizer, Bf16CompressionKeepsTheRangeAndRestoresTheDtype) {
  const at::Tensor grad = averaged_fine_gradient(Compression::kBf16, 0, "bf16c.");
  EXPECT_EQ(grad.scalar_type(), at::kFloat);
  // Rounded to bfloat16 on the way (float16 would have made it infinite).
  EXPECT_TRUE(grad.equal(at::full({1, 4}, 1048576.0))) << grad;
}

TEST(DistributedOptimizer, CompressionSparesGradientsBelowTheThreshold) {
  // 16 bytes, below 17: it travels as float32, exact.
  const at::Tensor grad = averaged_fine_gradient(Compression::kBf16, 17, "bf16s.");
  EXPECT_EQ(grad.scalar_type(), at::kFloat);
  EXPECT_TRUE(grad.allclose(at::full({1, 4}, 1049600.0), 1e-7, 0)) << grad;
}

TEST(DistributedOptimizer, RefusesANegativeCompressionThreshold) {
  torch::nn::Linear layer(torch::nn::LinearOptions(2, 1).bias(false));
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  DistributedOptimizerOptions options;
  options.compression_min_bytes = -1;
  const std::string message =
      error_of([&] { DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs(), options); });
  EXPECT_NE(message.find("compression_min_bytes must not be negative, got -1"), std::string::npos) << message;
}

TEST(DistributedOptimizer, ParameterWithoutGradientOnSomeRanksDoesNotDeadlock) {
  torch::nn::Linear used(torch::nn::LinearOptions(2, 1).bias(false)),
      unused(torch::nn::LinearOptions(2, 1).bias(false));
  std::vector<at::Tensor> parameters = {used->weight, unused->weight};
  torch::optim::SGD sgd(parameters, 1.0);
  DistributedOptimizerOptions options;
  options.name_prefix = "partial.";
  DistributedOptimizer optimizer(sgd, {{"used", used->weight}, {"unused", unused->weight}}, options);
  at::Tensor loss = used->forward(rank_input(2)).sum();
  if (rank() == 0) loss = loss + unused->forward(rank_input(2)).sum();  // only rank 0 touches `unused`
  loss.backward();
  optimizer.step();
  // Rank 0's gradient (1 per element) averaged with zeros from every other rank.
  EXPECT_TRUE(unused->weight.grad().allclose(at::full({1, 2}, 1.0 / size())));
}

TEST(DistributedOptimizer, DuplicateParameterNamesAreRefused) {
  torch::nn::Linear a(2, 1), b(2, 1);
  torch::optim::SGD sgd(a->parameters(), 1.0);
  const std::string message = error_of([&] { DistributedOptimizer o(sgd, {{"w", a->weight}, {"w", b->weight}}); });
  EXPECT_NE(message.find("'w' appears twice"), std::string::npos) << message;
}

// A layer whose weight starts at zero on every rank, and an SGD with learning rate 1 over it.
struct ZeroLayer {
  explicit ZeroLayer(std::int64_t n)
      : layer(torch::nn::LinearOptions(n, 1).bias(false)), sgd(layer->parameters(), 1.0) {
    torch::NoGradGuard no_grad;
    layer->weight.zero_();
  }
  torch::nn::Linear layer;
  torch::optim::SGD sgd;
};

DistributedOptimizerOptions summing(const std::string& prefix) {
  DistributedOptimizerOptions options;
  options.op = ReduceOp::kSum;  // a second reduction would multiply the gradient by size()
  options.name_prefix = prefix;
  return options;
}

// Horovod's gradient clipping recipe, without its skip_synchronize(): step() after
// synchronize() must not reduce the already-reduced gradients again.
TEST(DistributedOptimizer, StepAfterSynchronizeReducesOnce) {
  ZeroLayer model(3);
  DistributedOptimizer optimizer(model.sgd, model.layer->named_parameters().pairs(), summing("clip."));
  const double sum_of_ranks = mean_of_ranks() * size();
  for (int iteration = 1; iteration <= 2; ++iteration) {
    optimizer.zero_grad();
    model.layer->forward(rank_input(3)).sum().backward();
    optimizer.synchronize();
    optimizer.synchronize();  // a second call changes nothing either
    EXPECT_TRUE(model.layer->weight.grad().allclose(at::full({1, 3}, sum_of_ranks)));
    {
      torch::NoGradGuard no_grad;
      model.layer->weight.mutable_grad().mul_(0.5);  // "clipping", on the reduced gradient
    }
    optimizer.step();
    EXPECT_TRUE(model.layer->weight.allclose(at::full({1, 3}, -0.5 * sum_of_ranks * iteration))) << iteration;
  }
}

TEST(DistributedOptimizer, SkipSynchronizeStepsWithoutReducing) {
  ZeroLayer model(2);
  DistributedOptimizer optimizer(model.sgd, model.layer->named_parameters().pairs(), summing("skip."));
  model.layer->forward(rank_input(2)).sum().backward();
  optimizer.synchronize();
  {
    auto skip = optimizer.skip_synchronize();
    optimizer.step();
  }
  EXPECT_TRUE(model.layer->weight.allclose(at::full({1, 2}, -mean_of_ranks() * size())));

  // A backward pass after synchronize() starts allreduces that would land mid-step.
  optimizer.zero_grad();
  model.layer->forward(rank_input(2)).sum().backward();
  const std::string message = error_of([&] {
    auto skip = optimizer.skip_synchronize();
    optimizer.step();
  });
  EXPECT_NE(message.find("'skip.weight' is in flight"), std::string::npos) << message;
  optimizer.synchronize();  // what the message asks for; it drains the allreduce everywhere
  EXPECT_TRUE(model.layer->weight.grad().allclose(at::full({1, 2}, mean_of_ranks() * size())));
}

// Horovod's missing_named_parameters: a parameter nobody reduces trains on each rank alone.
TEST(DistributedOptimizer, TrainableParameterMissingFromNamedParametersIsRefused) {
  torch::nn::Linear layer(4, 2);
  torch::optim::SGD sgd(layer->parameters(), 1.0);
  const std::string message = error_of([&] { DistributedOptimizer o(sgd, {{"weight", layer->weight}}); });
  EXPECT_NE(message.find("1 parameter of the optimizer is missing from named_parameters "
                         "(param_groups()[0][1] of shape [2])"),
            std::string::npos)
      << message;

  // A frozen parameter may be left out, until it is unfrozen.
  layer->bias.set_requires_grad(false);
  DistributedOptimizerOptions options;
  options.name_prefix = "missing.";
  DistributedOptimizer optimizer(sgd, {{"weight", layer->weight}}, options);
  layer->bias.set_requires_grad(true);
  const std::string later = error_of([&] { optimizer.synchronize(); });
  EXPECT_NE(later.find("param_groups()[0][1] of shape [2]"), std::string::npos) << later;
}

// A parameter frozen when the optimizer was built and unfrozen later is reduced from then on
// (first at synchronize(), afterwards by its hook during backward); frozen again, it is left be.
TEST(DistributedOptimizer, FollowsParametersFrozenAndUnfrozenDuringTraining) {
  ZeroLayer always(2), late(2);
  std::vector<at::Tensor> parameters = {always.layer->weight, late.layer->weight};
  torch::optim::SGD sgd(parameters, 1.0);
  late.layer->weight.set_requires_grad(false);
  DistributedOptimizer optimizer(sgd, {{"always", always.layer->weight}, {"late", late.layer->weight}},
                                 summing("unfreeze."));
  auto train_step = [&] {
    optimizer.zero_grad();
    (always.layer->forward(rank_input(2)) + late.layer->forward(rank_input(2))).sum().backward();
    optimizer.step();
  };
  const double sum_of_ranks = mean_of_ranks() * size();
  train_step();
  EXPECT_FALSE(late.layer->weight.grad().defined());
  late.layer->weight.set_requires_grad(true);
  for (int unfrozen_steps = 1; unfrozen_steps <= 2; ++unfrozen_steps) {
    train_step();
    EXPECT_TRUE(late.layer->weight.grad().allclose(at::full({1, 2}, sum_of_ranks))) << unfrozen_steps;
    EXPECT_TRUE(late.layer->weight.allclose(at::full({1, 2}, -sum_of_ranks * unfrozen_steps))) << unfrozen_steps;
  }
  late.layer->weight.set_requires_grad(false);
  train_step();
  EXPECT_TRUE(late.layer->weight.allclose(at::full({1, 2}, -sum_of_ranks * 2)));
  EXPECT_TRUE(always.layer->weight.allclose(at::full({1, 2}, -sum_of_ranks * 4)));
}

// Each rank looks up its own row of an embedding with sparse gradients.
TEST(DistributedOptimizer, SparseGradientsAreReducedAsDense) {
  torch::nn::Embedding table(torch::nn::EmbeddingOptions(4, 2).sparse(true));
  torch::optim::SGD sgd(table->parameters(), 1.0);
  DistributedOptimizerOptions options;
  options.name_prefix = "sparse.";
  options.backward_passes_per_step = 2;  // the first pass leaves the sparse gradient be
  DistributedOptimizer optimizer(sgd, table->named_parameters().pairs(), options);
  table->forward(at::full({1}, rank(), at::kLong)).sum().backward();
  ASSERT_TRUE(table->weight.grad().is_sparse());
  table->forward(at::full({1}, rank(), at::kLong)).sum().backward();
  optimizer.synchronize();
  const at::Tensor grad = table->weight.grad();
  ASSERT_FALSE(grad.is_sparse());
  for (int row = 0; row < 4; ++row) {
    EXPECT_TRUE(grad[row].allclose(at::full({2}, row < size() ? 2.0 / size() : 0.0))) << row;
  }
}

TEST(Broadcast, ParametersAndOptimizerStateFromRoot) {
  torch::manual_seed(100 + rank());  // different weights on every rank
  torch::nn::Linear layer(3, 2);
  torch::optim::SGD sgd(layer->parameters(),
                        torch::optim::SGDOptions(0.01 * (rank() + 1)).momentum(rank() == 0 ? 0.9 : 0.1 * rank()));
  if (rank() == 0) {
    // Give rank 0 momentum buffers to send.
    layer->forward(at::ones({1, 3})).sum().backward();
    sgd.step();
  }
  broadcast_parameters(named_state(*layer), 0);
  broadcast_optimizer_state(sgd, 0);
  const at::Tensor reference = allgather(layer->weight.detach().reshape({1, -1}), "bcast.check");
  for (int r = 1; r < size(); ++r) EXPECT_TRUE(reference[r].equal(reference[0]));
  const auto& options = static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[0].options());
  EXPECT_EQ(options.lr(), 0.01);
  EXPECT_EQ(options.momentum(), 0.9);
  EXPECT_EQ(sgd.state().size(), 2u);  // rank 0's momentum buffers arrived everywhere
}

// Every rank builds the optimizer with its own options (rank 0's are the ones that count)
// and only rank 0 has stepped, so it alone has state. After the broadcasts one identical
// step must leave identical parameters everywhere, which needs rank 0's options and state.
using OptimizerFactory = std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor>)>;

std::vector<std::pair<std::string, OptimizerFactory>> optimizer_factories() {
  const double r = rank();
  return {
      {"sgd_nesterov",
       [r](std::vector<at::Tensor> p) {
         return std::make_unique<torch::optim::SGD>(
             p, torch::optim::SGDOptions(0.1 + r).momentum(0.9 - 0.1 * r).nesterov(true).weight_decay(0.01 * (r + 1)));
       }},
      {"adam",
       [r](std::vector<at::Tensor> p) {
         return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(0.01 + r)
                                                            .betas({0.8 + 0.01 * r, 0.99 - 0.01 * r})
                                                            .eps(1e-6 * (r + 1))
                                                            .weight_decay(0.1 * r));
       }},
      {"adamw",
       [r](std::vector<at::Tensor> p) {
         return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(0.01 + r)
                                                             .betas({0.8 + 0.01 * r, 0.99})
                                                             .weight_decay(0.1 * (r + 1))
                                                             .amsgrad(r == 0));
       }},
      {"rmsprop",
       [r](std::vector<at::Tensor> p) {
         return std::make_unique<torch::optim::RMSprop>(
             p, torch::optim::RMSpropOptions(0.01 + r).alpha(0.9 + 0.01 * r).momentum(0.5 * r).centered(r == 0));
       }},
      {"adagrad",
       [r](std::vector<at::Tensor> p) {
         return std::make_unique<torch::optim::Adagrad>(
             p, torch::optim::AdagradOptions(0.1 + r).lr_decay(0.01 * r).weight_decay(0.05 * (r + 1)));
       }},
  };
}

TEST(Broadcast, OptimizerStateAndOptionsOfEveryOptimizerType) {
  for (const auto& [kind, make] : optimizer_factories()) {
    torch::manual_seed(200 + rank());  // different weights on every rank
    torch::nn::Linear layer(3, 2);
    auto optimizer = make(layer->parameters());
    auto local_step = [&] {
      optimizer->zero_grad();
      layer->forward(at::ones({2, 3})).pow(2).sum().backward();
      optimizer->step();
    };
    if (rank() == 0) {
      local_step();
      local_step();
    }
    broadcast_parameters(named_state(*layer), 0);
    broadcast_optimizer_state(*optimizer, 0);
    local_step();
    const at::Tensor flat = at::cat({layer->weight.detach().flatten(), layer->bias.detach().flatten()}).unsqueeze(0);
    const at::Tensor everyone = allgather(flat, "bcast.every_optimizer." + kind);
    for (int other = 1; other < size(); ++other)
      EXPECT_TRUE(everyone[other].equal(everyone[0])) << kind << " rank " << other;
  }
}

// Buffers travel with the parameters, integer ones included (BatchNorm's batch count).
TEST(Broadcast, BuffersIncludingIntegerOnes) {
  torch::nn::BatchNorm1d norm(4);
  {
    torch::NoGradGuard no_grad;
    norm->running_mean.fill_(rank() + 0.5);
    norm->num_batches_tracked.fill_(7 + rank());
  }
  broadcast_parameters(named_state(*norm), 0);
  EXPECT_TRUE(norm->running_mean.equal(at::full({4}, 0.5)));
  EXPECT_EQ(norm->num_batches_tracked.scalar_type(), at::kLong);
  EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), 7);
}

TEST(Metric, AverageAcrossRanks) { EXPECT_DOUBLE_EQ(metric_average(rank() * 2.0, "metric"), size() - 1.0); }

// The data-parallel promise: N ranks with per-rank batch b train exactly as one process with
// batch N*b over the same samples. Checked on the MNIST network with Adam, after 20 steps.
// Float64, so that the comparison measures the algorithm, not float32 summation order (Adam
// divides by sqrt(v), which magnifies rounding on near-zero gradients).
TEST(Equivalence, RanksWithBatchBMatchOneProcessWithBatchNB) {
  const std::int64_t b = 4, steps = 20;
  torch::manual_seed(1234);
  const at::Tensor images = at::rand({steps * b * size(), 1, 28, 28}, at::kDouble);
  const at::Tensor labels = at::randint(10, {steps * b * size()}, at::kLong);

  auto make_model = [] {
    torch::manual_seed(99);
    dtrain::mnist::MnistNet net;
    net->to(at::kDouble);
    net->eval();  // no dropout: the comparison needs the same function on both sides
    return net;
  };
  dtrain::mnist::MnistNet single = make_model(), replica = make_model();
  torch::optim::Adam single_adam(single->parameters(), 1e-3);
  torch::optim::Adam replica_adam(replica->parameters(), 1e-3);
  DistributedOptimizerOptions options;
  options.name_prefix = "equivalence.";
  DistributedOptimizer distributed(replica_adam, replica->named_parameters().pairs(), options);

  for (std::int64_t step = 0; step < steps; ++step) {
    const std::int64_t begin = step * b * size();
    single_adam.zero_grad();
    torch::nn::functional::nll_loss(single->forward(images.slice(0, begin, begin + b * size())),
                                    labels.slice(0, begin, begin + b * size()))
        .backward();
    single_adam.step();

    const std::int64_t mine = begin + rank() * b;
    distributed.zero_grad();
    torch::nn::functional::nll_loss(replica->forward(images.slice(0, mine, mine + b)), labels.slice(0, mine, mine + b))
        .backward();
    distributed.step();
  }
  const auto expected = single->named_parameters();
  for (const auto& item : replica->named_parameters()) {
    const at::Tensor want = expected[item.key()];
    const double relative = (item.value() - want).abs().max().item<double>() / want.abs().max().item<double>();
    EXPECT_LE(relative, 1e-5) << item.key();
  }
}

}  // namespace
}  // namespace dtrain::libtorch
