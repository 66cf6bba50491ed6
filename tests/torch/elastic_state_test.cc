// The adapter's elastic parts in one process: ElasticSampler's epoch across a change of the
// world's size, and TorchState's save, restore and sync (sync in a world of one).
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <map>
#include <set>

#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

// What `size` ranks consume in `steps` steps of `batch` samples each from the sampler's position.
std::multiset<std::size_t> consume(ElasticSampler& sampler, int size, std::size_t batch, int steps) {
  std::vector<std::vector<std::size_t>> shares;
  for (int rank = 0; rank < size; ++rank) shares.push_back(sampler.indices(rank, size));
  std::multiset<std::size_t> used;
  for (int step = 0; step < steps; ++step) {
    for (const auto& share : shares) {
      for (std::size_t i = step * batch; i < std::min(share.size(), (step + 1) * batch); ++i) used.insert(share[i]);
    }
    sampler.record_batch(batch, size);
  }
  return used;
}

TEST(ElasticSampler, AWorldThatShrinksMidEpochSeesEverySampleOnce) {
  ElasticSampler sampler(1000, /*seed=*/7);
  sampler.set_epoch(3);
  std::multiset<std::size_t> seen = consume(sampler, 3, 16, 10);  // 480 samples on 3 ranks
  EXPECT_EQ(sampler.consumed(), 480u);
  const std::size_t per_rank = sampler.indices(0, 2).size();
  EXPECT_EQ(per_rank, 260u);  // the other 520, halved
  const auto rest = consume(sampler, 2, 16, static_cast<int>((per_rank + 15) / 16));
  seen.insert(rest.begin(), rest.end());
  EXPECT_EQ(sampler.remaining(), 0u);
  std::set<std::size_t> distinct(seen.begin(), seen.end());
  EXPECT_EQ(distinct.size(), 1000u);
  EXPECT_EQ(seen.size(), 1000u) << "no padding needed: 520 splits evenly";
}

TEST(ElasticSampler, PadsTheLastBatchByWrappingAndReshufflesPerEpoch) {
  ElasticSampler sampler(10, 1);
  const auto a = sampler.indices(0, 3), c = sampler.indices(2, 3);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(c.back(), sampler.indices(1, 3).front()) << "position 11 of 10 wraps to position 1";
  const auto epoch0 = sampler.indices(0, 1);
  sampler.set_epoch(1);
  EXPECT_NE(sampler.indices(0, 1), epoch0);
  EXPECT_THROW(sampler.set_position(1, 11), Error);
  EXPECT_THROW(sampler.indices(3, 3), Error);
}

TEST(TorchState, RestoreReturnsModelOptimizerSamplerAndCountersToTheLastCommit) {
  torch::manual_seed(0);
  torch::nn::Linear layer(3, 2);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(0.1));
  ElasticSampler sampler(100);
  TorchState state(*layer, adam, &sampler);
  std::int64_t& step = state.counter("step");
  auto train_step = [&] {
    adam.zero_grad();
    layer->forward(torch::ones({4, 3})).sum().backward();
    adam.step();
    sampler.record_batch(4, 1);
    ++step;
  };
  train_step();
  state.save();
  const at::Tensor weight = layer->weight.detach().clone();
  for (int i = 0; i < 3; ++i) train_step();
  adam.param_groups()[0].options().set_lr(0.5);
  ASSERT_FALSE(layer->weight.equal(weight));

  state.restore();
  EXPECT_TRUE(layer->weight.equal(weight));
  EXPECT_EQ(step, 1) << "the reference taken before stays valid";
  EXPECT_EQ(sampler.consumed(), 4u);
  EXPECT_DOUBLE_EQ(adam.param_groups()[0].options().get_lr(), 0.1);
  // Adam's moments went back too: its step count is the commit's.
  for (const auto& [key, param_state] : adam.state()) {
    EXPECT_EQ(static_cast<const torch::optim::AdamParamState&>(*param_state).step(), 1);
  }
}

TEST(TorchState, SyncInAWorldOfOneKeepsTheStateAndCommitsIt) {
  unsetenv("DTRAIN_SIZE");
  unsetenv("DTRAIN_RANK");
  init();
  torch::nn::Linear layer(2, 2);
  torch::optim::Adam adam(layer->parameters());
  ElasticSampler sampler(50);
  sampler.set_position(2, 10);
  TorchState state(*layer, adam, &sampler);
  state.counter("step") = 42;
  const at::Tensor weight = layer->weight.detach().clone();
  state.sync();
  EXPECT_TRUE(layer->weight.equal(weight));
  EXPECT_EQ(state.counter("step"), 42);
  EXPECT_EQ(sampler.epoch(), 2);
  EXPECT_EQ(sampler.consumed(), 10u);
  state.counter("step") = 50;
  state.restore();  // sync() committed what it synced
  EXPECT_EQ(state.counter("step"), 42);
  state.commit();  // outside an elastic job: a save, no question to the launcher
  EXPECT_EQ(state.commits(), 1);
  shutdown();
}

}  // namespace
}  // namespace dtrain::libtorch
