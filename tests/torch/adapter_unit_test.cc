// The adapter in a world of one process: tensor views, the sampler's sharding, checkpoints'
// atomicity and damage detection, and the MNIST reader's errors.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "dtrain/torch.h"
#include "tests/support/temp_dir.h"

namespace dtrain::libtorch {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::TempDir;

class WorldOfOne : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("DTRAIN_SIZE");
    unsetenv("DTRAIN_RANK");
    init();
  }
  void TearDown() override { shutdown(); }
};

TEST(TensorView, MapsDtypesAndRefusesWhatItCannotViewInPlace) {
  for (auto type : {at::kByte, at::kInt, at::kLong, at::kHalf, at::kBFloat16, at::kFloat, at::kDouble}) {
    EXPECT_EQ(scalar_type_of(dtype_of(type)), type);
  }
  EXPECT_THROW(dtype_of(at::kBool), Error);
  const at::Tensor t = at::arange(6, at::kFloat).reshape({2, 3});
  const TensorView view = view_of(t);
  EXPECT_EQ(view.data, t.data_ptr());
  EXPECT_EQ(view.shape, (std::vector<std::int64_t>{2, 3}));
  EXPECT_THROW(view_of(t.t()), Error);  // not contiguous
}

TEST_F(WorldOfOne, CollectivesOnTensorsIncludingNonContiguous) {
  at::Tensor t = at::arange(6, at::kFloat).reshape({2, 3});
  EXPECT_TRUE(allreduce(t, "t").equal(t));
  at::Tensor transposed = t.t();  // staged through a contiguous copy and written back
  allreduce_(transposed, "transposed", {ReduceOp::kSum, 2.0, 1.0});
  EXPECT_TRUE(transposed.equal(at::arange(6, at::kFloat).reshape({2, 3}).t() * 2));
  EXPECT_TRUE(allgather(t, "g").equal(t));
  EXPECT_TRUE(reducescatter(t, "rs").equal(t));
  auto [received, splits] = alltoall(t, "a2a");
  EXPECT_TRUE(received.equal(t));
  EXPECT_EQ(splits, (std::vector<std::int64_t>{2}));
}

TEST(Sampler, ShardsAreDisjointCompleteAndEqualInLength) {
  for (int replicas : {1, 2, 3, 4}) {
    std::multiset<std::size_t> seen;
    for (int r = 0; r < replicas; ++r) {
      DistributedSampler sampler(10, replicas, r, true, 7);
      sampler.set_epoch(3);
      const auto mine = sampler.indices();
      EXPECT_EQ(mine.size(), (10 + replicas - 1) / replicas);
      seen.insert(mine.begin(), mine.end());
    }
    for (std::size_t i = 0; i < 10; ++i) EXPECT_GE(seen.count(i), 1u) << "index " << i << " missing";
    EXPECT_EQ(seen.size(), ((10 + replicas - 1) / replicas) * replicas);  // padding only to equalise
  }
}

TEST(Sampler, ReshufflesPerEpochFromTheSharedSeed) {
  DistributedSampler a(100, 2, 0, true, 1), b(100, 2, 0, true, 1);
  EXPECT_EQ(a.indices(), b.indices());
  const auto epoch0 = a.indices();
  a.set_epoch(1);
  EXPECT_NE(a.indices(), epoch0);
  DistributedSampler ordered(5, 2, 1, false, 0, /*drop_last=*/true);
  EXPECT_EQ(ordered.indices(), (std::vector<std::size_t>{1, 3}));
  EXPECT_THROW(DistributedSampler(5, 2, 2), Error);
}

TEST_F(WorldOfOne, CheckpointRoundTripKeepsTheLastK) {
  const TempDir temp;
  const fs::path& dir = temp.path();
  torch::manual_seed(0);
  torch::nn::Linear model(4, 3);
  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
  // One step so the optimizer has momentum buffers to save.
  model->forward(torch::ones({2, 4})).sum().backward();
  sgd.step();
  Checkpointer checkpointer(dir.string(), 2);
  for (std::int64_t step : {10, 20, 30}) checkpointer.save(*model, sgd, {1, step});
  const auto files = checkpointer.list();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files.back().find("checkpoint-000000000030.dtrain"), std::string::npos);
  for (const auto& entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().extension(), ".dtrain") << "left behind: " << entry.path();
  }

  const at::Tensor saved_weight = model->weight.detach().clone();
  torch::NoGradGuard no_grad;
  model->weight.zero_();
  torch::optim::SGD fresh(model->parameters(), torch::optim::SGDOptions(0.5));
  const auto progress = checkpointer.restore(*model, fresh);
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->step, 30);
  EXPECT_EQ(progress->epoch, 1);
  EXPECT_TRUE(model->weight.equal(saved_weight));
  const auto& options = static_cast<torch::optim::SGDOptions&>(fresh.param_groups()[0].options());
  EXPECT_EQ(options.lr(), 0.1);
  EXPECT_EQ(options.momentum(), 0.9);
}

TEST_F(WorldOfOne, EmptyDirectoryRestoresNothing) {
  const TempDir temp;
  const fs::path& dir = temp.path();
  torch::nn::Linear model(2, 2);
  torch::optim::SGD sgd(model->parameters(), 0.1);
  EXPECT_FALSE(Checkpointer(dir.string()).restore(*model, sgd).has_value());
}

std::string error_restoring(const fs::path& dir) {
  torch::nn::Linear model(4, 3);
  torch::optim::SGD sgd(model->parameters(), 0.1);
  try {
    Checkpointer(dir.string()).restore(*model, sgd);
  } catch (const Error& e) {
    return e.what();
  }
  return "(restored)";
}

TEST_F(WorldOfOne, DamagedOrTruncatedCheckpointIsNamedAndRefused) {
  const TempDir temp;
  const fs::path& dir = temp.path();
  torch::nn::Linear model(4, 3);
  torch::optim::SGD sgd(model->parameters(), 0.1);
  Checkpointer(dir.string()).save(*model, sgd, {0, 5});
  const std::string path = Checkpointer(dir.string()).list().back();
  {  // flip a byte's bits (writing a fixed value left the file intact when the random weights had it there)
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    const char byte = static_cast<char>(f.get());
    f.seekp(100);
    f.put(static_cast<char>(~byte));
  }
  std::string message = error_restoring(dir);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
  fs::resize_file(path, fs::file_size(path) / 2);
  message = error_restoring(dir);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
}

TEST_F(WorldOfOne, CheckpointOfAnotherModelIsRefusedByName) {
  const TempDir temp;
  const fs::path& dir = temp.path();
  torch::nn::Linear small(2, 2);
  torch::optim::SGD sgd(small->parameters(), 0.1);
  Checkpointer(dir.string()).save(*small, sgd, {0, 1});
  const std::string message = error_restoring(dir);
  EXPECT_NE(message.find("model.weight"), std::string::npos) << message;
}

}  // namespace
}  // namespace dtrain::libtorch
