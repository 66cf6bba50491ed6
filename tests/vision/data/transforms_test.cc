#include <set>

#include <gtest/gtest.h>

#include "vision/data/transforms.h"

namespace dtrain::vision {
namespace {

// The sizes torchvision's GeneralizedRCNNTransform produces, worked out by
// hand from its formula: scale = min(min_size / min(h, w), max_size /
// max(h, w)) in float32, then floor(side * scale).
TEST(ResizeRule, MatchesTorchvisionsFormula) {
  struct Case {
    uint32_t h, w;
    float min_size, max_size;
    uint32_t out_h, out_w;
  };
  const Case cases[] = {
      {480, 640, 800, 1333, 799, 1066},                                     // 800/480 in float32 is just under 5/3
      {427, 640, 800, 1333, 800, 1199}, {1000, 200, 800, 1333, 1332, 266},  // capped by max_size; float32 1.333 < 1.333
      {333, 500, 800, 1333, 799, 1201}, {612, 612, 800, 1333, 800, 800},
      {100, 50, 32, 64, 63, 31},  // downscaling, max side decides
  };
  for (const Case& c : cases) {
    const auto [h, w] = resized_size(c.h, c.w, c.min_size, c.max_size);
    EXPECT_EQ(h, c.out_h) << c.h << "x" << c.w;
    EXPECT_EQ(w, c.out_w) << c.h << "x" << c.w;
  }
  EXPECT_FLOAT_EQ(resize_scale(480, 640, 800, 1333), 800.0f / 480.0f);
  EXPECT_FLOAT_EQ(resize_scale(1000, 200, 800, 1333), 1333.0f / 1000.0f);
}

InstanceTargets one_instance(uint32_t h, uint32_t w, std::array<float, 4> box) {
  InstanceTargets t;
  t.height = h;
  t.width = w;
  t.boxes.push_back(box);
  t.labels.push_back(1);
  t.masks.assign(size_t{h} * w, 0);
  for (uint32_t y = static_cast<uint32_t>(box[1]); y < static_cast<uint32_t>(box[3]); ++y) {
    for (uint32_t x = static_cast<uint32_t>(box[0]); x < static_cast<uint32_t>(box[2]); ++x) {
      t.masks[size_t{y} * w + x] = 1;
    }
  }
  return t;
}

TEST(Transforms, FlipMovesBoxesMasksAndPixelsTogether) {
  RgbImage image(4, 10);
  InstanceTargets t = one_instance(4, 10, {1, 1, 4, 3});
  for (uint32_t y = 1; y < 3; ++y) {
    for (uint32_t x = 1; x < 4; ++x) image.at(y, x)[0] = 255;
  }
  horizontal_flip(image, t);
  EXPECT_EQ(t.boxes[0], (std::array<float, 4>{6, 1, 9, 3}));
  for (uint32_t y = 0; y < 4; ++y) {
    for (uint32_t x = 0; x < 10; ++x) {
      const bool inside = y >= 1 && y < 3 && x >= 6 && x < 9;
      EXPECT_EQ(t.masks[y * 10 + x], inside ? 1 : 0) << x << "," << y;
      EXPECT_EQ(image.at(y, x)[0], inside ? 255 : 0) << x << "," << y;
    }
  }
  // Twice is the identity.
  horizontal_flip(image, t);
  EXPECT_EQ(t, one_instance(4, 10, {1, 1, 4, 3}));
}

TEST(Transforms, NormalizeIsChannelMajorMeanStd) {
  RgbImage image(1, 2);
  image.pixels = {255, 0, 51, 0, 255, 102};
  const FloatImage f = normalize(image, {0.5f, 0.5f, 0.5f}, {0.5f, 0.25f, 1.0f});
  ASSERT_EQ(f.data.size(), 6u);
  EXPECT_FLOAT_EQ(f.data[0], 1.0f);     // R of pixel 0
  EXPECT_FLOAT_EQ(f.data[1], -1.0f);    // R of pixel 1
  EXPECT_FLOAT_EQ(f.data[2], -2.0f);    // G of pixel 0
  EXPECT_FLOAT_EQ(f.data[3], 2.0f);     // G of pixel 1
  EXPECT_NEAR(f.data[4], -0.3f, 1e-6);  // B: 51/255 - 0.5
  EXPECT_NEAR(f.data[5], -0.1f, 1e-6);
}

TEST(Transforms, BilinearResizeFollowsPyTorch) {
  // 1 x 2 -> 1 x 4 with align_corners = false: source x = (d + 0.5) / 2 - 0.5,
  // clamped at 0: 0, 0.25, 0.75, 1.25 -> values a, a+.25(b-a), a+.75(b-a), b.
  FloatImage in;
  in.height = 1;
  in.width = 2;
  in.data = {0, 4, 0, 8, 1, 1};
  const FloatImage out = resize_bilinear(in, 1, 4);
  EXPECT_FLOAT_EQ(out.data[0], 0);
  EXPECT_FLOAT_EQ(out.data[1], 1);
  EXPECT_FLOAT_EQ(out.data[2], 3);
  EXPECT_FLOAT_EQ(out.data[3], 4);
  EXPECT_FLOAT_EQ(out.data[5], 2);  // second channel: 0 -> 8
  EXPECT_FLOAT_EQ(out.data[6], 6);
  EXPECT_FLOAT_EQ(out.data[9], 1);  // third channel constant
}

TEST(Transforms, ResizeScalesBoxesAndMasksWithTheImage) {
  FloatImage image;
  image.height = 10;
  image.width = 20;
  image.data.assign(3 * 200, 0.5f);
  InstanceTargets t = one_instance(10, 20, {2, 4, 10, 8});
  resize(image, t, 15, 30);
  EXPECT_EQ(image.height, 15u);
  EXPECT_EQ(image.width, 30u);
  EXPECT_EQ(t.height, 15u);
  EXPECT_EQ(t.boxes[0], (std::array<float, 4>{3, 6, 15, 12}));
  // Nearest neighbour: dst y -> floor(y * 10 / 15), x -> floor(x * 20 / 30).
  for (uint32_t y = 0; y < 15; ++y) {
    for (uint32_t x = 0; x < 30; ++x) {
      const uint32_t sy = y * 10 / 15, sx = x * 20 / 30;
      const bool inside = sy >= 4 && sy < 8 && sx >= 2 && sx < 10;
      EXPECT_EQ(t.masks[y * 30 + x], inside ? 1 : 0) << x << "," << y;
    }
  }
}

TEST(Transforms, SampleChoicesDependOnlyOnTheSeed) {
  TransformOptions options;
  options.min_sizes = {16, 20, 24, 28};
  options.max_size = 100;
  std::set<uint32_t> heights;
  int flips = 0;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    RgbImage image(8, 12);
    const TransformedSample a = transform_sample(image, one_instance(8, 12, {1, 1, 5, 5}), options, seed);
    const TransformedSample b = transform_sample(image, one_instance(8, 12, {1, 1, 5, 5}), options, seed);
    EXPECT_EQ(a.image, b.image);
    EXPECT_EQ(a.targets, b.targets);
    EXPECT_EQ(a.flipped, b.flipped);
    heights.insert(a.image.height);
    flips += a.flipped;
    // The shorter side is one of the min sizes (no max-size cap here).
    EXPECT_TRUE(a.image.height == 16 || a.image.height == 20 || a.image.height == 24 || a.image.height == 28)
        << a.image.height;
    EXPECT_EQ(a.targets.height, a.image.height);
    EXPECT_EQ(a.targets.width, a.image.width);
  }
  EXPECT_EQ(heights.size(), 4u);
  EXPECT_GT(flips, 10);
  EXPECT_LT(flips, 54);
}

}  // namespace
}  // namespace dtrain::vision
