// Anchor generation, the FPN level mapper and multi-scale RoIAlign on
// hand-computed cases.
#include <gtest/gtest.h>

#include <vector>

#include "vision/ops/anchor_generator.h"
#include "vision/ops/multiscale_roi_align.h"
#include "vision/ops/roi_align.h"

namespace dtrain::vision::ops {
namespace {

at::Tensor rows(std::vector<float> values) { return at::tensor(values, at::kFloat).view({-1, 4}); }

TEST(AnchorGenerator, CellAnchorsMatchTorchvision) {
  const at::Tensor cell = AnchorGenerator::cell_anchors({32}, {0.5, 1.0, 2.0});
  EXPECT_EQ(cell.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(cell, rows({-23, -11, 23, 11, -16, -16, 16, 16, -11, -23, 11, 23})));
  // Ratios outer, sizes inner.
  const at::Tensor two = AnchorGenerator::cell_anchors({32, 64}, {1.0, 2.0});
  EXPECT_TRUE(at::equal(two, rows({-16, -16, 16, 16, -32, -32, 32, 32,  //
                                   -11, -23, 11, 23, -23, -45, 23, 45})));
}

TEST(AnchorGenerator, GridAnchorsCountAndOrder) {
  const AnchorGenerator gen({{32}}, {{0.5, 1.0, 2.0}});
  EXPECT_EQ(gen.num_anchors_per_location(), (std::vector<int64_t>{3}));
  // A 2x3 feature map of a 32x48 image: stride 16 both ways.
  const AnchorGenerator::Anchors a = gen.generate({32, 48}, {{2, 3}});
  ASSERT_EQ(a.per_level.size(), 1u);
  ASSERT_EQ(a.all.sizes(), (at::IntArrayRef{2 * 3 * 3, 4}));
  EXPECT_TRUE(at::equal(a.all, a.per_level[0]));
  const at::Tensor cell = AnchorGenerator::cell_anchors({32}, {0.5, 1.0, 2.0});
  // Locations row-major (y outer, x inner), then the three cell anchors.
  const int shifts[6][2] = {{0, 0}, {16, 0}, {32, 0}, {0, 16}, {16, 16}, {32, 16}};
  for (int loc = 0; loc < 6; ++loc) {
    const float sx = static_cast<float>(shifts[loc][0]);
    const float sy = static_cast<float>(shifts[loc][1]);
    const at::Tensor shift = at::tensor(std::vector<float>{sx, sy, sx, sy});
    EXPECT_TRUE(at::equal(a.all.slice(0, 3 * loc, 3 * loc + 3), cell + shift)) << "location " << loc;
  }
  EXPECT_TRUE(at::equal(a.all[12], at::tensor(std::vector<float>{-7, 5, 39, 27})));
}

TEST(AnchorGenerator, StridesUseIntegerDivisionPerAxis) {
  // 40 / 2 = 20 rows, 50 / 3 = 16 columns.
  const AnchorGenerator gen({{16}}, {{1.0}});
  const at::Tensor a = gen.generate({40, 50}, {{2, 3}}).all;
  ASSERT_EQ(a.size(0), 6);
  EXPECT_TRUE(at::equal(a[5], at::tensor(std::vector<float>{32 - 8, 20 - 8, 32 + 8, 20 + 8})));
}

TEST(AnchorGenerator, LevelsConcatenateInOrder) {
  const AnchorGenerator gen({{32}, {64}}, {{1.0}, {0.5, 1.0, 2.0}});
  EXPECT_EQ(gen.num_anchors_per_location(), (std::vector<int64_t>{1, 3}));
  const AnchorGenerator::Anchors a = gen.generate({64, 64}, {{4, 4}, {2, 2}});
  ASSERT_EQ(a.per_level.size(), 2u);
  EXPECT_EQ(a.per_level[0].size(0), 16);
  EXPECT_EQ(a.per_level[1].size(0), 12);
  ASSERT_EQ(a.all.size(0), 28);
  EXPECT_TRUE(at::equal(a.all.slice(0, 16), a.per_level[1]));
  EXPECT_TRUE(at::equal(a.all[17], at::tensor(std::vector<float>{-32, -32, 32, 32})));
  EXPECT_THROW(gen.generate({64, 64}, {{4, 4}}), c10::Error);
  EXPECT_THROW(AnchorGenerator({{32}}, {{1.0}, {1.0}}), c10::Error);
}

at::Tensor square(float x, float y, float side) { return rows({x, y, x + side, y + side}); }

TEST(LevelMapper, CanonicalSizesMapToTheirLevels) {
  const LevelMapper mapper(2, 5);
  // 224 is level 4; halving or doubling moves one level. eps keeps the exact
  // powers of two from falling to the level below.
  const at::Tensor levels =
      mapper({at::cat({square(0, 0, 112), square(5, 5, 224)}),
              at::cat({square(0, 0, 448), square(0, 0, 10), square(0, 0, 2000), square(0, 0, 223)})});
  EXPECT_EQ(levels.scalar_type(), at::kLong);
  // 112 -> 3, 224 -> 4, 448 -> 5, 10 -> clamped to 2, 2000 -> clamped to 5, 223 -> 3; minus k_min.
  EXPECT_TRUE(at::equal(levels, at::tensor(std::vector<int64_t>{1, 2, 3, 0, 3, 1})));
}

TEST(MultiScaleRoIAlign, InfersPowerOfTwoScales) {
  EXPECT_DOUBLE_EQ(infer_scale(200, 800), 0.25);
  EXPECT_DOUBLE_EQ(infer_scale(25, 800), 1.0 / 32);
  EXPECT_DOUBLE_EQ(infer_scale(13, 800), 1.0 / 64);  // log2(0.01625) = -5.94 rounds to -6
  EXPECT_DOUBLE_EQ(infer_scale(800, 800), 1.0);
}

TEST(MultiScaleRoIAlign, EachRoiIsPooledFromItsLevelInRoiOrder) {
  at::manual_seed(0);
  // Two images padded to 512x512; levels at 1/4 and 1/8.
  const at::Tensor p2 = at::rand({2, 3, 128, 128});
  const at::Tensor p3 = at::rand({2, 3, 64, 64});
  // Image 0: a 40-pixel box (level 2) then a 300-pixel box (level 3, clamped
  // from 4); image 1: a 150-pixel box (level 3) then a 20-pixel one (level 2).
  const std::vector<at::Tensor> boxes = {at::cat({square(10, 10, 40), square(0, 0, 300)}),
                                         at::cat({square(30, 40, 150), square(100, 7, 20)})};
  MultiScaleRoIAlign pooler({7, 7}, 2);
  const at::Tensor out = pooler.forward({p2, p3}, boxes, {{500, 480}, {512, 400}});
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{4, 3, 7, 7}));
  EXPECT_EQ(pooler.scales(), (std::vector<double>{0.25, 0.125}));
  ASSERT_TRUE(pooler.level_mapper().has_value());
  EXPECT_EQ(pooler.level_mapper()->k_min(), 2);
  EXPECT_EQ(pooler.level_mapper()->k_max(), 3);

  const auto expect_pooled = [&](int64_t k, const at::Tensor& feature, double scale, float image,
                                 const at::Tensor& box) {
    const at::Tensor roi = at::cat({at::full({1, 1}, image), box}, 1);
    const at::Tensor ref = roi_align_forward(feature, roi, scale, 7, 7, 2, /*aligned=*/false);
    EXPECT_TRUE(at::equal(out.slice(0, k, k + 1), ref)) << "roi " << k;
  };
  expect_pooled(0, p2, 0.25, 0, boxes[0].slice(0, 0, 1));
  expect_pooled(1, p3, 0.125, 0, boxes[0].slice(0, 1, 2));
  expect_pooled(2, p3, 0.125, 1, boxes[1].slice(0, 0, 1));
  expect_pooled(3, p2, 0.25, 1, boxes[1].slice(0, 1, 2));
}

TEST(MultiScaleRoIAlign, SingleLevelIsPlainRoiAlignAndGradientsReachFeatures) {
  const at::Tensor feature = at::rand({1, 2, 16, 16}).requires_grad_(true);
  const std::vector<at::Tensor> boxes = {at::cat({square(0, 0, 30), square(8, 12, 200)})};
  MultiScaleRoIAlign pooler({2, 3}, 0);
  const at::Tensor out = pooler.forward({feature}, boxes, {{64, 60}});
  EXPECT_EQ(pooler.scales(), (std::vector<double>{0.25}));
  const at::Tensor rois = at::cat({at::zeros({2, 1}), boxes[0]}, 1);
  EXPECT_TRUE(at::equal(out.detach(), roi_align_forward(feature.detach(), rois, 0.25, 2, 3, 0, false)));
  out.sum().backward();
  ASSERT_TRUE(feature.grad().defined());
  EXPECT_GT(feature.grad().abs().sum().item<float>(), 0.0f);

  // Multi-level: gradients reach every level that pooled a box.
  const at::Tensor p2 = at::rand({1, 2, 32, 32}).requires_grad_(true);
  const at::Tensor p3 = at::rand({1, 2, 16, 16}).requires_grad_(true);
  MultiScaleRoIAlign two({2, 2}, 2);
  two.forward({p2, p3}, {at::cat({square(0, 0, 20), square(0, 0, 120)})}, {{128, 128}}).sum().backward();
  EXPECT_GT(p2.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_GT(p3.grad().abs().sum().item<float>(), 0.0f);
}

}  // namespace
}  // namespace dtrain::vision::ops
