#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "vision/data/data_loader.h"
#include "vision/data/image_codec.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

// A small generated shapes set, portrait and landscape images mixed.
class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    SyntheticSpec spec;
    spec.out_dir = dir_->path().string();
    spec.train = 30;
    spec.val = 0;
    spec.size = 48;
    spec.min_size = 24;
    spec.seed = 11;
    spec.threads = 2;
    make_shapes_dataset(spec);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string json() { return *dir_ / "annotations/instances_train.json"; }
  static std::string images() { return *dir_ / "train"; }

  static LoaderOptions options(int workers) {
    LoaderOptions o;
    o.batch_size = 4;
    o.workers = workers;
    o.prefetch_batches = 2;
    o.seed = 5;
    o.transforms.min_sizes = {32, 40};
    o.transforms.max_size = 64;
    return o;
  }

  static std::vector<SampleBatch> read_epoch(DataLoader& loader, uint64_t epoch) {
    loader.start_epoch(epoch);
    std::vector<SampleBatch> batches;
    while (auto b = loader.next()) batches.push_back(std::move(*b));
    return batches;
  }

  static testing::TempDir* dir_;
};

testing::TempDir* LoaderTest::dir_ = nullptr;

std::vector<int64_t> ids_of(const std::vector<SampleBatch>& batches) {
  std::vector<int64_t> ids;
  for (const auto& b : batches) {
    for (const auto& s : b.samples) ids.push_back(s.image_id);
  }
  return ids;
}

TEST_F(LoaderTest, SameSeedSameOrderAndBytesForAnyThreadCount) {
  const CocoDataset ds = CocoDataset::load(json(), images());
  DataLoader one(ds, options(1));
  DataLoader three(ds, options(3));
  const auto a = read_epoch(one, 0);
  const auto b = read_epoch(three, 0);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(ids_of(a), ids_of(b));
  size_t flipped = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].samples.size(), b[i].samples.size());
    for (size_t j = 0; j < a[i].samples.size(); ++j) {
      EXPECT_EQ(a[i].samples[j].image, b[i].samples[j].image);
      EXPECT_EQ(a[i].samples[j].targets, b[i].samples[j].targets);
      flipped += a[i].samples[j].flipped;
    }
  }
  EXPECT_GT(flipped, 0u);
  // Every training image once, in shuffled order.
  std::vector<int64_t> ids = ids_of(a);
  EXPECT_EQ(ids.size(), ds.training_indices().size());
  EXPECT_FALSE(std::is_sorted(ids.begin(), ids.end()));
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end());

  // Another epoch reshuffles; the same epoch again repeats.
  EXPECT_NE(ids_of(read_epoch(one, 1)), ids_of(a));
  EXPECT_EQ(ids_of(read_epoch(three, 0)), ids_of(a));
  // Another seed gives another order.
  LoaderOptions other = options(2);
  other.seed = 6;
  DataLoader different(ds, other);
  EXPECT_NE(ids_of(read_epoch(different, 0)), ids_of(a));
}

TEST_F(LoaderTest, StartingAtABatchGivesTheRestOfTheEpochUnchanged) {
  // A resumed run starts mid-epoch and must see exactly what it would have seen.
  const CocoDataset ds = CocoDataset::load(json(), images());
  DataLoader loader(ds, options(2));
  const auto whole = read_epoch(loader, 3);
  ASSERT_GT(whole.size(), 3u);
  loader.start_epoch(3, 2);
  std::vector<SampleBatch> rest;
  while (auto b = loader.next()) rest.push_back(std::move(*b));
  ASSERT_EQ(rest.size(), whole.size() - 2);
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(rest[i].index, whole[i + 2].index);
    ASSERT_EQ(rest[i].samples.size(), whole[i + 2].samples.size());
    for (size_t j = 0; j < rest[i].samples.size(); ++j) {
      EXPECT_EQ(rest[i].samples[j].image_id, whole[i + 2].samples[j].image_id);
      EXPECT_EQ(rest[i].samples[j].image, whole[i + 2].samples[j].image);
    }
  }
  // Past the end: an empty epoch, not an error.
  loader.start_epoch(3, whole.size() + 5);
  EXPECT_FALSE(loader.next().has_value());
}

TEST_F(LoaderTest, SamplesAreTransformedConsistently) {
  const CocoDataset ds = CocoDataset::load(json(), images());
  DataLoader loader(ds, options(2));
  for (const auto& batch : read_epoch(loader, 0)) {
    for (const auto& s : batch.samples) {
      const uint32_t shorter = std::min(s.image.height, s.image.width);
      const uint32_t longer = std::max(s.image.height, s.image.width);
      EXPECT_TRUE(shorter == 32 || shorter == 40 || longer == 64 || shorter == 31 || shorter == 39)
          << s.image.height << "x" << s.image.width;
      EXPECT_LE(longer, 64u);
      EXPECT_EQ(s.targets.height, s.image.height);
      EXPECT_EQ(s.targets.width, s.image.width);
      EXPECT_GT(s.targets.size(), 0u);
      EXPECT_EQ(s.targets.masks.size(), s.targets.size() * s.image.height * s.image.width);
      for (int64_t label : s.targets.labels) EXPECT_TRUE(label >= 1 && label <= 3);
    }
  }
}

TEST(Sharding, DisjointCompleteEqualLengths) {
  for (size_t n : {24u, 25u, 7u}) {
    std::vector<uint32_t> items(n);
    for (uint32_t i = 0; i < n; ++i) items[i] = 100 + i;
    for (int world : {1, 2, 3, 4}) {
      for (uint64_t epoch : {0u, 1u}) {
        std::multiset<uint32_t> all;
        size_t length = 0;
        for (int rank = 0; rank < world; ++rank) {
          const auto shard = shard_for_epoch(items, 9, epoch, rank, world, true);
          if (rank == 0) length = shard.size();
          EXPECT_EQ(shard.size(), length);
          all.insert(shard.begin(), shard.end());
        }
        EXPECT_EQ(length, (n + world - 1) / world);
        // Complete; repeats only from padding up to a multiple of the world.
        EXPECT_EQ(std::set<uint32_t>(all.begin(), all.end()).size(), n);
        EXPECT_EQ(all.size() - n, (world - n % world) % world);
        if (n % world == 0) {
          for (uint32_t v : items) EXPECT_EQ(all.count(v), 1u);
        }
      }
    }
  }
  // drop_tail: strictly disjoint, equal, n - n % world items.
  std::vector<uint32_t> items(25);
  for (uint32_t i = 0; i < 25; ++i) items[i] = i;
  std::multiset<uint32_t> all;
  for (int rank = 0; rank < 4; ++rank) {
    const auto shard = shard_for_epoch(items, 1, 0, rank, 4, true, /*drop_tail=*/true);
    EXPECT_EQ(shard.size(), 6u);
    all.insert(shard.begin(), shard.end());
  }
  EXPECT_EQ(std::set<uint32_t>(all.begin(), all.end()).size(), 24u);
  // Reshuffled per epoch from the shared seed.
  EXPECT_NE(shard_for_epoch(items, 1, 0, 0, 2, true), shard_for_epoch(items, 1, 1, 0, 2, true));
  EXPECT_THROW(shard_for_epoch(items, 1, 0, 2, 2, true), CocoError);
}

TEST_F(LoaderTest, RanksReadDisjointShardsOfTheEpoch) {
  const CocoDataset ds = CocoDataset::load(json(), images());
  const size_t n = ds.training_indices().size();
  const int world = 3;
  std::multiset<int64_t> seen;
  std::set<size_t> batch_counts;
  for (int rank = 0; rank < world; ++rank) {
    LoaderOptions o = options(2);
    o.rank = rank;
    o.world_size = world;
    DataLoader loader(ds, o);
    const auto batches = read_epoch(loader, 3);
    batch_counts.insert(batches.size());
    for (int64_t id : ids_of(batches)) seen.insert(id);
  }
  EXPECT_EQ(batch_counts.size(), 1u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), n);
  EXPECT_EQ(seen.size(), (n + world - 1) / world * world);
}

TEST_F(LoaderTest, AspectRatioGroupingKeepsOneOrientationPerBatch) {
  const CocoDataset ds = CocoDataset::load(json(), images());
  LoaderOptions o = options(2);
  o.group_by_aspect_ratio = true;
  o.batch_size = 3;
  DataLoader loader(ds, o);
  const auto batches = read_epoch(loader, 0);
  size_t portrait_batches = 0, landscape_batches = 0, total = 0;
  for (const auto& b : batches) {
    std::set<bool> orientations;
    for (const auto& s : b.samples) orientations.insert(s.original_width > s.original_height);
    ASSERT_EQ(orientations.size(), 1u) << "batch " << b.index << " mixes orientations";
    (*orientations.begin() ? landscape_batches : portrait_batches)++;
    total += b.samples.size();
  }
  EXPECT_GT(portrait_batches, 0u);
  EXPECT_GT(landscape_batches, 0u);
  EXPECT_EQ(total, ds.training_indices().size());  // one rank: leftovers become short batches

  // Several ranks: equal batch counts, each batch still one orientation.
  std::set<size_t> counts;
  for (int rank = 0; rank < 2; ++rank) {
    LoaderOptions r = o;
    r.rank = rank;
    r.world_size = 2;
    DataLoader ranked(ds, r);
    const auto rb = read_epoch(ranked, 1);
    counts.insert(rb.size());
    for (const auto& b : rb) {
      std::set<bool> orientations;
      for (const auto& s : b.samples) orientations.insert(s.original_width > s.original_height);
      EXPECT_EQ(orientations.size(), 1u);
    }
  }
  EXPECT_EQ(counts.size(), 1u);
}

TEST_F(LoaderTest, MissingOrCorruptImageNamesTheFileOrIsSkipped) {
  testing::TempDir copy;
  std::filesystem::copy(images(), copy.path(), std::filesystem::copy_options::recursive);
  const CocoDataset ds = CocoDataset::load(json(), copy.path().string());
  const DatasetImage& victim = ds.images()[ds.training_indices()[0]];
  const DatasetImage& corrupt = ds.images()[ds.training_indices()[1]];
  std::filesystem::remove(ds.image_path(victim));
  write_file_bytes(ds.image_path(corrupt), std::vector<uint8_t>{0x89, 'P', 'N', 'G', 1, 2, 3});

  LoaderOptions o = options(2);
  o.shuffle = false;  // the missing image is in the first batch
  DataLoader strict(ds, o);
  strict.start_epoch(0);
  try {
    strict.next();
    FAIL() << "expected an error";
  } catch (const CocoError& e) {
    EXPECT_EQ(std::string(e.what()), ds.image_path(victim) + ": cannot open file");
  }

  std::vector<std::string> warnings;
  o.policy = BadInputPolicy::kSkip;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  DataLoader lenient(ds, o);
  const auto batches = read_epoch(lenient, 0);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0], ds.image_path(victim) + ": cannot open file; skipping the sample");
  EXPECT_EQ(warnings[1].rfind(ds.image_path(corrupt) + ": ", 0), 0u) << warnings[1];
  EXPECT_EQ(ids_of(batches).size(), ds.training_indices().size() - 2);
  EXPECT_EQ(batches[0].samples.size(), 2u);
}

}  // namespace
}  // namespace dtrain::vision
