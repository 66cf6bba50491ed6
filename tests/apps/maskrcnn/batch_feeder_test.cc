// The trainer's batch feeder on the CPU, collating inline and ahead on its thread (what it
// does for a GPU, but for the pinned memory): the same batches in the same order, a resumed
// run continuing the data order, and a loading error surfacing in next().
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/maskrcnn/batch_feeder.h"
#include "tests/support/temp_dir.h"
#include "vision/coco/coco_error.h"
#include "vision/data/synthetic_shapes.h"

namespace dtrain::maskrcnn {
namespace {

class BatchFeederTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    vision::SyntheticSpec spec;
    spec.out_dir = dir_->path().string();
    spec.train = 10;
    spec.size = 40;
    spec.min_size = 24;
    spec.seed = 4;
    spec.threads = 2;
    vision::make_shapes_dataset(spec);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string images() { return *dir_ / "train"; }
  static vision::CocoDataset dataset(const std::string& image_dir = images()) {
    return vision::CocoDataset::load(*dir_ / "annotations/instances_train.json", image_dir);
  }

  static vision::LoaderOptions loader_options() {
    vision::LoaderOptions o;
    o.batch_size = 2;
    o.workers = 2;
    o.seed = 8;
    o.drop_last = true;  // as the trainer: every epoch has batches_per_epoch batches
    o.transforms.min_sizes = {32};
    o.transforms.max_size = 48;
    return o;
  }
  static FeederOptions feeder_options(const vision::DataLoader& loader, bool ahead, int64_t start = 0) {
    FeederOptions o;
    o.start_iteration = start;
    o.batches_per_epoch = loader.items().size() / 2;
    o.collate_ahead = ahead;
    o.annotations = "shapes";
    return o;
  }

  static testing::TempDir* dir_;
};

testing::TempDir* BatchFeederTest::dir_ = nullptr;

void expect_same(const ModelInputs& a, const ModelInputs& b, int step) {
  EXPECT_EQ(a.dataset_indices, b.dataset_indices) << "step " << step;
  EXPECT_TRUE(a.images.tensors.equal(b.images.tensors)) << "step " << step;
  EXPECT_EQ(a.images.image_sizes, b.images.image_sizes) << "step " << step;
  ASSERT_EQ(a.targets.size(), b.targets.size());
  for (size_t i = 0; i < a.targets.size(); ++i) {
    EXPECT_TRUE(a.targets[i].boxes.equal(b.targets[i].boxes)) << "step " << step;
    EXPECT_TRUE(a.targets[i].labels.equal(b.targets[i].labels)) << "step " << step;
    EXPECT_TRUE(a.targets[i].masks.equal(b.targets[i].masks)) << "step " << step;
  }
}

TEST_F(BatchFeederTest, CollatingAheadHandsOutTheInlineBatchesInOrderAcrossEpochs) {
  const vision::CocoDataset data = dataset();
  vision::DataLoader inline_loader(data, loader_options()), ahead_loader(data, loader_options());
  BatchFeeder inline_feeder(inline_loader, feeder_options(inline_loader, false));
  BatchFeeder ahead_feeder(ahead_loader, feeder_options(ahead_loader, true));
  const int steps = static_cast<int>(inline_loader.items().size() / 2 * 5 / 2);  // two and a half epochs
  std::vector<uint32_t> first_epoch, second_epoch;
  for (int step = 0; step < steps; ++step) {
    const ModelInputs expected = inline_feeder.next();
    expect_same(ahead_feeder.next(), expected, step);
    std::vector<uint32_t>& epoch = step < steps * 2 / 5 ? first_epoch : second_epoch;
    if (step < steps * 4 / 5)
      epoch.insert(epoch.end(), expected.dataset_indices.begin(), expected.dataset_indices.end());
  }
  EXPECT_NE(first_epoch, second_epoch) << "the epochs were not reshuffled";
}

TEST_F(BatchFeederTest, AResumedRunContinuesTheDataOrder) {
  const vision::CocoDataset data = dataset();
  vision::DataLoader fresh_loader(data, loader_options()), resumed_loader(data, loader_options());
  BatchFeeder fresh(fresh_loader, feeder_options(fresh_loader, true));
  const int64_t start = static_cast<int64_t>(fresh_loader.items().size() / 2) + 2;  // into the second epoch
  BatchFeeder resumed(resumed_loader, feeder_options(resumed_loader, true, start));
  for (int64_t step = 0; step < start; ++step) fresh.next();
  for (int step = 0; step < 3; ++step) expect_same(resumed.next(), fresh.next(), step);
}

TEST_F(BatchFeederTest, AnImageThatCannotBeReadFailsNextNamingIt) {
  testing::TempDir copy;
  std::filesystem::copy(images(), copy.path(), std::filesystem::copy_options::recursive);
  const vision::CocoDataset data = dataset(copy.path().string());
  for (const uint32_t index : data.training_indices()) std::filesystem::remove(data.image_path(data.images()[index]));
  vision::DataLoader loader(data, loader_options());
  BatchFeeder feeder(loader, feeder_options(loader, true));
  try {
    feeder.next();
    FAIL() << "expected an error";
  } catch (const vision::CocoError& e) {
    EXPECT_NE(std::string(e.what()).find(": cannot open file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(copy.path().string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(feeder.next(), vision::CocoError) << "the error must stay, not hang the next call";
}

TEST_F(BatchFeederTest, RefusesADataSetWithoutOneBatchPerRank) {
  const vision::CocoDataset data = dataset();
  vision::DataLoader loader(data, loader_options());
  FeederOptions o = feeder_options(loader, false);
  o.batches_per_epoch = 0;
  try {
    BatchFeeder feeder(loader, o);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "shapes: not enough training images for one batch per rank");
  }
}

}  // namespace
}  // namespace dtrain::maskrcnn
