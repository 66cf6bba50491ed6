#include "vision/coco/polygon_rasterizer.h"

#include <gtest/gtest.h>

#include <random>

#include "vision/coco/rle_string.h"

namespace dtrain::vision {
namespace {

TEST(PolygonRasterizer, IntegerBoxCoversExactlyItsPixels) {
  // Box x 1..3, y 1..2 in a 5x4 image (h=4, w=5): pixels x in {1,2}, y = 1.
  const RunLengthMask rle = rle_from_box({1, 1, 2, 1}, 4, 5);
  // Column-major: column 0 empty (4), column 1 has y=1 (skip 1, take 1),
  // column 2 the same, then the rest.
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{5, 1, 3, 1, 10}));
  EXPECT_EQ(rle_area(rle), 2u);
  EXPECT_EQ(rle_to_bbox(rle), (BoundingBox{1, 1, 2, 1}));
}

TEST(PolygonRasterizer, BoxEqualsItsFourCornerPolygon) {
  const std::vector<double> corners = {2.3, 1.7, 2.3, 9.1, 7.8, 9.1, 7.8, 1.7};
  EXPECT_EQ(rle_from_polygon(corners, 12, 10), rle_from_box({2.3, 1.7, 5.5, 7.4}, 12, 10));
}

TEST(PolygonRasterizer, RightTriangleHandDerived) {
  // Triangle (0,0), (0,4), (4,4) in a 4x4 image: pixel centres (x+.5, y+.5)
  // strictly below the diagonal y = x, i.e. y >= x per column: 4+3+2+1 pixels.
  const std::vector<double> xy = {0, 0, 0, 4, 4, 4};
  const RunLengthMask rle = rle_from_polygon(xy, 4, 4);
  EXPECT_EQ(rle_area(rle), 10u);
  EXPECT_EQ(rle.counts, (std::vector<uint32_t>{0, 4, 1, 3, 2, 2, 3, 1}));
}

TEST(PolygonRasterizer, ClipsToTheImage) {
  const RunLengthMask rle = rle_from_box({-3, -3, 5, 5}, 6, 6);  // covers x, y in 0..1
  EXPECT_EQ(rle_area(rle), 4u);
  EXPECT_EQ(rle_to_bbox(rle), (BoundingBox{0, 0, 2, 2}));
  EXPECT_EQ(rle_area(rle_from_box({10, 10, 5, 5}, 6, 6)), 0u);
}

TEST(PolygonRasterizer, EmptyAndDegeneratePolygons) {
  EXPECT_EQ(rle_from_polygon({}, 3, 3).counts, (std::vector<uint32_t>{9}));
  const std::vector<double> repeated = {1, 1, 1, 1, 1, 1, 3, 1, 3, 3, 3, 3, 1, 3};
  const std::vector<double> plain = {1, 1, 3, 1, 3, 3, 1, 3};
  EXPECT_EQ(rle_from_polygon(repeated, 5, 5), rle_from_polygon(plain, 5, 5));
}

TEST(PolygonRasterizerProperty, IntegerBoxesHaveAreaWidthTimesHeight) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pos(0, 30), len(1, 20);
  for (int trial = 0; trial < 500; ++trial) {
    const int x = pos(rng), y = pos(rng), w = len(rng), h = len(rng);
    const RunLengthMask rle = rle_from_box({double(x), double(y), double(w), double(h)}, 64, 48);
    const int visible_w = std::min(x + w, 48) - x, visible_h = std::min(y + h, 64) - y;
    ASSERT_EQ(rle_area(rle), uint32_t(visible_w * visible_h));
    ASSERT_EQ(rle_to_bbox(rle), (BoundingBox{double(x), double(y), double(visible_w), double(visible_h)}));
  }
}

TEST(PolygonRasterizerProperty, ReversedPolygonGivesTheSameMask) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> coord(-5, 45);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> xy;
    const int n = 3 + trial % 8;
    for (int i = 0; i < n; ++i) {
      xy.push_back(coord(rng));
      xy.push_back(coord(rng));
    }
    std::vector<double> reversed;
    for (int i = n - 1; i >= 0; --i) {
      reversed.push_back(xy[2 * i]);
      reversed.push_back(xy[2 * i + 1]);
    }
    const RunLengthMask a = rle_from_polygon(xy, 40, 41);
    ASSERT_EQ(a, rle_from_polygon(reversed, 40, 41));
    uint64_t total = 0;
    for (uint32_t c : a.counts) total += c;
    ASSERT_EQ(total, 40u * 41u);
  }
}

}  // namespace
}  // namespace dtrain::vision
