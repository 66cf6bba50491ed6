#include "vision/coco/mask_iou.h"

#include <gtest/gtest.h>

#include <random>

#include "vision/coco/polygon_rasterizer.h"

namespace dtrain::vision {
namespace {

TEST(BoxIou, OverlapCrowdAndDisjoint) {
  const BoundingBox a{0, 0, 2, 2}, b{1, 1, 2, 2};
  EXPECT_DOUBLE_EQ(box_iou(a, b, false), 1.0 / 7.0);
  // Crowd ground truth: intersection over the detection's own area.
  EXPECT_DOUBLE_EQ(box_iou(a, b, true), 1.0 / 4.0);
  EXPECT_EQ(box_iou(a, {2, 0, 1, 1}, false), 0.0);  // touching edges do not overlap
  EXPECT_EQ(box_iou(a, a, false), 1.0);
}

TEST(MaskIou, MatchesBoxIouForIntegerBoxes) {
  const RunLengthMask a = rle_from_box({0, 0, 2, 2}, 5, 5), b = rle_from_box({1, 1, 2, 2}, 5, 5);
  EXPECT_DOUBLE_EQ(rle_iou(a, b, false), 1.0 / 7.0);
  EXPECT_DOUBLE_EQ(rle_iou(a, b, true), 1.0 / 4.0);
  EXPECT_EQ(rle_iou(a, rle_from_box({3, 3, 2, 2}, 5, 5), false), 0.0);
}

TEST(MaskIou, DifferentSizesGiveMinusOneWhenBoxesOverlap) {
  const RunLengthMask a = rle_from_box({0, 0, 2, 2}, 5, 5), b = rle_from_box({0, 0, 2, 2}, 6, 5);
  EXPECT_EQ(rle_iou(a, b, false), -1.0);
}

TEST(MaskIouProperty, ExactIouMatchesPixelCounts) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<uint32_t> side(1, 20);
  std::bernoulli_distribution coin(0.4);
  for (int trial = 0; trial < 400; ++trial) {
    const uint32_t h = side(rng), w = side(rng);
    std::vector<uint8_t> a(h * w), b(h * w);
    for (auto& v : a) v = coin(rng);
    for (auto& v : b) v = coin(rng);
    uint32_t inter = 0, uni = 0, area_a = 0;
    for (size_t p = 0; p < a.size(); ++p) {
      inter += a[p] & b[p];
      uni += a[p] | b[p];
      area_a += a[p];
    }
    const RunLengthMask ra = rle_encode(a, h, w), rb = rle_encode(b, h, w);
    const double expected = inter == 0 ? 0.0 : double(inter) / double(uni);
    const double expected_crowd = inter == 0 ? 0.0 : double(inter) / double(area_a);
    ASSERT_EQ(rle_iou_exact(ra, rb, false), expected);
    ASSERT_EQ(rle_iou_exact(ra, rb, true), expected_crowd);
    ASSERT_EQ(rle_iou(ra, rb, false), expected);
  }
}

}  // namespace
}  // namespace dtrain::vision
