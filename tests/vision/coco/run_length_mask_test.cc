#include "vision/coco/run_length_mask.h"

#include <gtest/gtest.h>

#include <random>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

// A random 0/1 mask made of blobs, column-major.
std::vector<uint8_t> random_mask(std::mt19937& rng, uint32_t h, uint32_t w) {
  std::vector<uint8_t> mask(size_t{h} * w, 0);
  std::uniform_int_distribution<int> kind(0, 3);
  const int mode = kind(rng);
  std::bernoulli_distribution coin(mode == 0 ? 0.5 : mode == 1 ? 0.05 : 0.95);
  for (auto& p : mask) p = coin(rng);
  if (mode == 3) std::fill(mask.begin(), mask.end(), 0);
  return mask;
}

TEST(RunLengthMask, EncodesColumnMajorRunsStartingWithZeros) {
  // 3x2 image, column-major pixels: column 0 = (0,1,1), column 1 = (1,0,0).
  const std::vector<uint8_t> pixels = {0, 1, 1, 1, 0, 0};
  const RunLengthMask rle = rle_encode(pixels, 3, 2);
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{1, 3, 2}));
  EXPECT_EQ(rle_area(rle), 3u);
  // The run of ones wraps from column 0 into column 1: COCO widens to full height.
  EXPECT_EQ(rle_to_bbox(rle), (BoundingBox{0, 0, 2, 3}));
}

TEST(RunLengthMask, MaskStartingWithOnesHasEmptyFirstRun) {
  const std::vector<uint8_t> pixels = {1, 1, 0, 0};
  EXPECT_EQ(rle_encode(pixels, 2, 2).counts, (std::vector<uint32_t>{0, 2, 2}));
  EXPECT_EQ(rle_to_bbox(rle_encode(pixels, 2, 2)), (BoundingBox{0, 0, 1, 2}));
}

TEST(RunLengthMask, BoxOfASingleInteriorBlock) {
  // 4x4, pixels (x=1..2, y=1..2) set.
  std::vector<uint8_t> pixels(16, 0);
  for (int x = 1; x <= 2; ++x)
    for (int y = 1; y <= 2; ++y) pixels[x * 4 + y] = 1;
  const RunLengthMask rle = rle_encode(pixels, 4, 4);
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{5, 2, 2, 2, 5}));
  EXPECT_EQ(rle_to_bbox(rle), (BoundingBox{1, 1, 2, 2}));
  EXPECT_EQ(rle_area(rle), 4u);
}

TEST(RunLengthMask, EmptyMaskHasZeroBoxAndArea) {
  const RunLengthMask rle = rle_encode(std::vector<uint8_t>(12, 0), 3, 4);
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{12}));
  EXPECT_EQ(rle_area(rle), 0u);
  EXPECT_EQ(rle_to_bbox(rle), (BoundingBox{}));
}

TEST(RunLengthMask, RejectsWrongPixelCount) {
  EXPECT_THROW(rle_encode(std::vector<uint8_t>(5, 0), 2, 2), CocoError);
  EXPECT_THROW(rle_decode(RunLengthMask{2, 2, {3, 4}}), CocoError);
}

TEST(RunLengthMaskProperty, DecodeInvertsEncodeAndAreaCountsPixels) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> side(1, 40);
  for (int trial = 0; trial < 500; ++trial) {
    const uint32_t h = side(rng), w = side(rng);
    const std::vector<uint8_t> mask = random_mask(rng, h, w);
    const RunLengthMask rle = rle_encode(mask, h, w);
    ASSERT_EQ(rle_decode(rle), mask);
    uint32_t pixels = 0, sum = 0;
    for (uint8_t p : mask) pixels += p;
    for (uint32_t c : rle.counts) sum += c;
    ASSERT_EQ(rle_area(rle), pixels);
    ASSERT_EQ(sum, h * w);
    // Runs alternate, so only the first may be empty.
    for (size_t i = 1; i < rle.counts.size(); ++i) ASSERT_GT(rle.counts[i], 0u);
  }
}

TEST(RunLengthMaskProperty, BoxContainsEveryPixelAndIsTightForBlocks) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> side(1, 30);
  for (int trial = 0; trial < 300; ++trial) {
    const uint32_t h = side(rng), w = side(rng);
    std::uniform_int_distribution<uint32_t> xs(0, w - 1), ys(0, h - 1);
    uint32_t x0 = xs(rng), x1 = xs(rng), y0 = ys(rng), y1 = ys(rng);
    if (x0 > x1) std::swap(x0, x1);
    if (y0 > y1) std::swap(y0, y1);
    std::vector<uint8_t> mask(size_t{h} * w, 0);
    for (uint32_t x = x0; x <= x1; ++x)
      for (uint32_t y = y0; y <= y1; ++y) mask[x * h + y] = 1;
    const BoundingBox box = rle_to_bbox(rle_encode(mask, h, w));
    // One run per column, or a single run when the block spans the full
    // height; either way the box is the block.
    EXPECT_EQ(box, (BoundingBox{double(x0), double(y0), double(x1 - x0 + 1), double(y1 - y0 + 1)}))
        << h << "x" << w << " block " << x0 << ".." << x1 << ", " << y0 << ".." << y1;
  }
}

// COCO's rleToBbox as the COCO API writes it, with plain divisions.
BoundingBox reference_bbox(const RunLengthMask& mask) {
  const uint32_t h = mask.height;
  const size_t runs = mask.counts.size() / 2 * 2;
  if (runs == 0 || h == 0) return {};
  uint32_t xs = mask.width, ys = h, xe = 0, ye = 0, cc = 0, xp = 0;
  for (size_t j = 0; j < runs; ++j) {
    cc += mask.counts[j];
    const uint32_t t = cc - j % 2;
    const uint32_t y = t % h, x = (t - y) / h;
    if (j % 2 == 0) {
      xp = x;
    } else if (xp < x) {
      ys = 0;
      ye = h - 1;
    }
    xs = std::min(xs, x);
    xe = std::max(xe, x);
    ys = std::min(ys, y);
    ye = std::max(ye, y);
  }
  return {double(xs), double(ys), double(xe - xs + 1), double(ye - ys + 1)};
}

// rle_to_bbox divides by multiplying; on every size, from one-pixel-high
// images to ones near 2^32 pixels, it must give the divisions' box.
TEST(RunLengthMaskProperty, BoxMatchesTheCocoApiOnAnySize) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 3000; ++trial) {
    const uint32_t h = trial % 10 == 0 ? 1 + trial % 3 : std::uniform_int_distribution<uint32_t>(1, 70000)(rng);
    const uint64_t max_w = std::min<uint64_t>(0xFFFFFFFFull / h, 70000);
    const auto w = static_cast<uint32_t>(std::uniform_int_distribution<uint64_t>(1, max_w)(rng));
    const uint64_t pixels = uint64_t{h} * w;
    RunLengthMask rle{h, w, {}};
    uint64_t covered = 0;
    const int runs = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int r = 0; r < runs && covered < pixels; ++r) {
      const uint64_t most = std::min<uint64_t>(pixels - covered, r % 3 == 0 ? pixels : 3 * h);
      const uint64_t run = std::uniform_int_distribution<uint64_t>(r == 0 ? 0 : 1, most)(rng);
      rle.counts.push_back(static_cast<uint32_t>(run));
      covered += run;
    }
    if (covered < pixels) rle.counts.push_back(static_cast<uint32_t>(pixels - covered));
    ASSERT_EQ(rle_to_bbox(rle), reference_bbox(rle)) << h << "x" << w << ", trial " << trial;
  }
}

}  // namespace
}  // namespace dtrain::vision
