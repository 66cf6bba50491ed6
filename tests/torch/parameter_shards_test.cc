// ZeRO's partition rule (src/torch/parameter_shards.h): the same owners on every rank, the
// largest parameters spread first, the load as even as whole parameters allow.
#include "torch/parameter_shards.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

TEST(AssignOwners, LargestFirstToTheLightestRank) {
  // 100 -> 0, 60 -> 1, 50 -> 1 (60 < 100), 10 -> 0 (100 < 110), 5 -> 0 (110 == 110: lowest rank).
  EXPECT_EQ(assign_owners({10, 100, 50, 60, 5}, 2), (std::vector<int>{0, 0, 1, 1, 0}));
}

TEST(AssignOwners, EqualSizesKeepTheirOrder) {
  EXPECT_EQ(assign_owners({4, 4, 4, 4, 4}, 3), (std::vector<int>{0, 1, 2, 0, 1}));
}

TEST(AssignOwners, MoreRanksThanParametersLeavesSomeRanksWithout) {
  EXPECT_EQ(assign_owners({3, 7}, 4), (std::vector<int>{1, 0}));
}

TEST(AssignOwners, OneRankOwnsEverything) { EXPECT_EQ(assign_owners({1, 2, 3}, 1), (std::vector<int>{0, 0, 0})); }

TEST(ShardedOptimizer, CompressionWithShardedGradientsIsRefused) {
  torch::nn::Linear layer(2, 1);
  torch::optim::SGD sgd(layer->parameters(), 0.1);
  DistributedOptimizerOptions options;
  options.sharding = Sharding::kGradients;
  options.compression = Compression::kBf16;
  try {
    DistributedOptimizer optimizer(sgd, layer->named_parameters().pairs(), options);
    FAIL() << "accepted compression with Sharding::kGradients";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not combine with Sharding::kGradients"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::libtorch
