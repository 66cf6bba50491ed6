// DistributedOptimizer with sharded optimizer state (ZeRO 1 and 2) across real processes
// (ctest runs it under `dtrain run -np 2` and `-np 3`): it must train exactly as the unsharded
// optimizer does, while each rank keeps the state of its own parameters only.
#include <gtest/gtest.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <memory>

#include "dtrain/torch.h"
#include "torch/optimizer_state.h"
#include "tests/support/error_of.h"

namespace dtrain::libtorch {
namespace {

using dtrain::testing::error_of;
using MakeOptimizer = std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor>)>;

MakeOptimizer sgd_with_momentum() {
  return [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  };
}

MakeOptimizer adam() {
  return [](std::vector<at::Tensor> p) {
    return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(0.01).weight_decay(1e-3));
  };
}

// A float64 model whose parameters differ in size (so owners differ), the same on every rank.
torch::nn::Sequential make_model() {
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(6, 9), torch::nn::Linear(9, 4), torch::nn::Linear(4, 1));
  model->to(at::kDouble);
  return model;
}

// One model trained by one DistributedOptimizer; each rank its own batches.
struct Trainer {
  torch::nn::Sequential model = make_model();
  std::unique_ptr<torch::optim::Optimizer> inner;
  std::unique_ptr<DistributedOptimizer> optimizer;

  Trainer(const MakeOptimizer& make, Sharding sharding, const std::string& prefix,
          std::int64_t bucket_bytes = std::int64_t{25} << 20) {
    inner = make(model->parameters());
    DistributedOptimizerOptions options;
    options.sharding = sharding;
    options.sharding_bucket_bytes = bucket_bytes;
    options.name_prefix = prefix;
    optimizer = std::make_unique<DistributedOptimizer>(*inner, model->named_parameters().pairs(), options);
  }

  void step(int step) {
    const at::Tensor input = at::sin(at::arange(24, at::kDouble).reshape({4, 6}) * (rank() + 1) + step);
    optimizer->zero_grad();
    model->forward(input).pow(2).mean().backward();
    optimizer->step();
  }

  at::Tensor flat_parameters() const {
    std::vector<at::Tensor> all;
    for (const auto& p : model->parameters()) all.push_back(p.detach().flatten());
    return at::cat(all);
  }
};

double max_difference(const Trainer& a, const Trainer& b) {
  return (a.flat_parameters() - b.flat_parameters()).abs().max().item<double>();
}

std::string sharding_name(Sharding sharding) {
  return sharding == Sharding::kOptimizerState ? "optimizer_state" : "gradients";
}

// Buckets of 300 bytes cut the model's parameters (float64: 432, 72, 288, 32, 32 and 8 bytes)
// into two: the last layers' reduction starts during backward, owners balanced within each.
TEST(ShardedOptimizer, TrainsAsTheUnshardedOneFor20Steps) {
  for (Sharding sharding : {Sharding::kOptimizerState, Sharding::kGradients}) {
    for (const auto& [kind, make] : {std::pair{"sgd", sgd_with_momentum()}, std::pair{"adam", adam()}}) {
      for (std::int64_t bucket_bytes : {std::int64_t{25} << 20, std::int64_t{300}}) {
        const std::string label =
            std::string(kind) + "." + sharding_name(sharding) + "." + std::to_string(bucket_bytes);
        Trainer whole(make, Sharding::kNone, "whole." + label + ".");
        Trainer sharded(make, sharding, "sharded." + label + ".", bucket_bytes);
        for (int step = 0; step < 20; ++step) {
          whole.step(step);
          sharded.step(step);
        }
        EXPECT_LE(max_difference(whole, sharded), 1e-9) << label;
        // Every rank holds the same parameters: the owners' values were gathered.
        const at::Tensor everyone = allgather(sharded.flat_parameters().unsqueeze(0), "check." + label);
        for (int r = 1; r < size(); ++r) EXPECT_TRUE(everyone[r].equal(everyone[0])) << label << " rank " << r;
      }
    }
  }
}

// Freezing a layer leaves every other parameter with its owner (and its optimizer state).
TEST(ShardedOptimizer, FollowsALayerFrozenAndUnfrozen) {
  for (Sharding sharding : {Sharding::kOptimizerState, Sharding::kGradients}) {
    const std::string label = "freeze." + sharding_name(sharding);
    Trainer whole(adam(), Sharding::kNone, "whole." + label + ".");
    Trainer sharded(adam(), sharding, "sharded." + label + ".", /*bucket_bytes=*/300);
    auto set_first_layer_trainable = [](Trainer& trainer, bool trainable) {
      for (auto& p : trainer.model[0]->parameters()) p.requires_grad_(trainable);
    };
    for (int step = 0; step < 12; ++step) {
      if (step == 4 || step == 8) {
        set_first_layer_trainable(whole, step == 8);
        set_first_layer_trainable(sharded, step == 8);
      }
      whole.step(step);
      sharded.step(step);
    }
    EXPECT_LE(max_difference(whole, sharded), 1e-9) << label;
  }
}

TEST(ShardedOptimizer, EachRankKeepsStateOnlyForTheParametersItOwns) {
  Trainer sharded(adam(), Sharding::kOptimizerState, "owned.");
  for (int step = 0; step < 3; ++step) sharded.step(step);
  const std::vector<std::string> owned = sharded.optimizer->owned_parameters();
  EXPECT_EQ(sharded.inner->state().size(), owned.size());
  // Together the ranks own every parameter exactly once.
  at::Tensor count = at::tensor({static_cast<std::int64_t>(owned.size())});
  allreduce_(count, "owned.count", {ReduceOp::kSum});
  EXPECT_EQ(count.item<std::int64_t>(), static_cast<std::int64_t>(sharded.model->parameters().size()));
  // With three Linear layers there is something to share, so no rank holds all the state.
  EXPECT_LT(owned.size(), sharded.model->parameters().size());
}

TEST(ShardedOptimizer, StageTwoKeepsOnlyTheOwnedGradients) {
  Trainer sharded(sgd_with_momentum(), Sharding::kGradients, "stage2.");
  sharded.step(0);
  const auto owned = sharded.optimizer->owned_parameters();
  for (const auto& item : sharded.model->named_parameters()) {
    const bool mine = std::find(owned.begin(), owned.end(), item.key()) != owned.end();
    EXPECT_EQ(item.value().grad().defined(), mine) << item.key();
  }
}

// A checkpoint of the consolidated state resumes an unsharded optimizer (a world of any size)
// and a sharded one exactly where the sharded training left off.
TEST(ShardedOptimizer, ConsolidatedStateResumesShardedAndUnshardedTraining) {
  for (Sharding sharding : {Sharding::kOptimizerState, Sharding::kGradients}) {
    const std::string label = sharding_name(sharding);
    Trainer original(adam(), sharding, "original." + label + ".");
    for (int step = 0; step < 4; ++step) original.step(step);
    original.optimizer->consolidate_state(0);
    std::string checkpoint = rank() == 0 ? optimizer_bytes(*original.inner) : "";
    if (rank() == 0) {
      EXPECT_EQ(original.inner->state().size(), original.model->parameters().size());
    }
    checkpoint = broadcast_bytes(checkpoint, 0, "checkpoint." + label);

    Trainer unsharded(adam(), Sharding::kNone, "resumed_whole." + label + ".");
    Trainer resharded(adam(), sharding, "resumed_sharded." + label + ".");
    for (Trainer* resumed : {&unsharded, &resharded}) {
      torch::NoGradGuard no_grad;
      for (std::size_t i = 0; i < resumed->model->parameters().size(); ++i) {
        resumed->model->parameters()[i].copy_(original.model->parameters()[i]);
      }
      load_optimizer_bytes(*resumed->inner, checkpoint);
    }
    for (int step = 4; step < 9; ++step) {
      original.step(step);
      unsharded.step(step);
      resharded.step(step);
    }
    EXPECT_LE(max_difference(original, unsharded), 1e-9) << label;
    EXPECT_LE(max_difference(original, resharded), 1e-9) << label;
    // The step dropped what the loaded checkpoint held for parameters owned elsewhere.
    EXPECT_EQ(resharded.inner->state().size(), resharded.optimizer->owned_parameters().size()) << label;
  }
}

TEST(ShardedOptimizer, ConsolidateRefusesARootOutsideTheWorld) {
  Trainer sharded(sgd_with_momentum(), Sharding::kOptimizerState, "root.");
  EXPECT_NE(error_of([&] { sharded.optimizer->consolidate_state(size()); }).find("is not a rank"), std::string::npos);
}

}  // namespace
}  // namespace dtrain::libtorch
