#include "vision/coco/rle_merge.h"

#include <gtest/gtest.h>

#include <random>

namespace dtrain::vision {
namespace {

std::vector<uint8_t> random_mask(std::mt19937& rng, uint32_t pixels, double p) {
  std::bernoulli_distribution coin(p);
  std::vector<uint8_t> mask(pixels);
  for (auto& v : mask) v = coin(rng);
  return mask;
}

TEST(RleMerge, UnionAndIntersectionOfTwoSmallMasks) {
  const RunLengthMask a = rle_encode(std::vector<uint8_t>{1, 1, 0, 0}, 2, 2);
  const RunLengthMask b = rle_encode(std::vector<uint8_t>{0, 1, 1, 0}, 2, 2);
  const std::vector<RunLengthMask> both = {a, b};
  EXPECT_EQ(rle_merge(both).counts, (std::vector<uint32_t>{0, 3, 1}));
  EXPECT_EQ(rle_merge(both, true).counts, (std::vector<uint32_t>{1, 1, 2}));
}

TEST(RleMerge, EdgeCases) {
  EXPECT_EQ(rle_merge({}), RunLengthMask{});
  const RunLengthMask a = rle_encode(std::vector<uint8_t>{1, 0, 0, 1}, 2, 2);
  EXPECT_EQ(rle_merge(std::vector<RunLengthMask>{a}), a);
  const RunLengthMask other_size = rle_encode(std::vector<uint8_t>{1, 0, 0, 1}, 4, 1);
  EXPECT_EQ(rle_merge(std::vector<RunLengthMask>{a, other_size}), RunLengthMask{});
}

TEST(RleMergeProperty, MatchesPixelwiseOrAndAnd) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<uint32_t> side(1, 25), count(2, 4);
  std::uniform_real_distribution<double> density(0.05, 0.95);
  for (int trial = 0; trial < 400; ++trial) {
    const uint32_t h = side(rng), w = side(rng), n = count(rng);
    std::vector<std::vector<uint8_t>> masks;
    std::vector<RunLengthMask> rles;
    for (uint32_t i = 0; i < n; ++i) {
      masks.push_back(random_mask(rng, h * w, density(rng)));
      rles.push_back(rle_encode(masks.back(), h, w));
    }
    std::vector<uint8_t> any(h * w, 0), all(h * w, 1);
    for (const auto& m : masks) {
      for (size_t p = 0; p < m.size(); ++p) {
        any[p] |= m[p];
        all[p] &= m[p];
      }
    }
    ASSERT_EQ(rle_merge(rles, false), rle_encode(any, h, w));
    ASSERT_EQ(rle_merge(rles, true), rle_encode(all, h, w));
  }
}

}  // namespace
}  // namespace dtrain::vision
