// Pasting per-box masks into the image: box expansion, the inclusive "+ 1"
// box extent, bilinear resizing with the zero border, and clipping.
#include <gtest/gtest.h>

#include <vector>

#include "vision/ops/paste_masks.h"

namespace dtrain::vision::ops {
namespace {

at::Tensor boxes_of(std::vector<float> values) { return at::tensor(values, at::kFloat).view({-1, 4}); }

TEST(PasteMasks, ExpandBoxesAndMasks) {
  EXPECT_TRUE(at::equal(expand_boxes(boxes_of({0, 0, 10, 20}), 2.0), boxes_of({-5, -10, 15, 30})));
  const auto [padded, scale] = expand_masks(at::ones({2, 1, 4, 4}), 1);
  EXPECT_EQ(padded.sizes(), (at::IntArrayRef{2, 1, 6, 6}));
  EXPECT_DOUBLE_EQ(scale, 1.5);
  EXPECT_EQ(padded.sum().item<float>(), 2 * 16);
  EXPECT_EQ(padded[0][0][0].sum().item<float>(), 0);
}

TEST(PasteMasks, ConstantMaskWithoutPaddingFillsTheInclusiveBox) {
  // Box columns 2..9 and rows 3..7, both ends included.
  const at::Tensor out = paste_masks_in_image(at::ones({1, 1, 5, 5}), boxes_of({2, 3, 9, 7}), 12, 16, /*padding=*/0);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{1, 1, 12, 16}));
  EXPECT_EQ(out.scalar_type(), at::kFloat);
  at::Tensor expected = at::zeros({12, 16});
  expected.slice(0, 3, 8).slice(1, 2, 10).fill_(1);
  EXPECT_TRUE(at::equal(out[0][0], expected));
}

TEST(PasteMasks, PaddingGrowsTheBoxAndFadesItsEdges) {
  // 4x4 ones padded to 6x6, scale 1.5: box (2, 3, 9, 7) grows to
  // (0.25, 2, 10.75, 8) -> int (0, 2, 10, 8), an 11 x 7 paste.
  const at::Tensor out = paste_masks_in_image(at::ones({1, 1, 4, 4}), boxes_of({2, 3, 9, 7}), 12, 16);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{1, 1, 12, 16}));
  const at::Tensor m = out[0][0];
  // Nothing outside rows 2..8 and columns 0..10.
  EXPECT_EQ(m.slice(0, 0, 2).abs().sum().item<float>(), 0);
  EXPECT_EQ(m.slice(0, 9).abs().sum().item<float>(), 0);
  EXPECT_EQ(m.slice(1, 11).abs().sum().item<float>(), 0);
  // Rows 6 -> 7: source row of output row r is (r + 0.5) * 6 / 7 - 0.5.
  // Row 0 (image row 2) reads the zero border; row 1 reads 0.7857 of the
  // way into the ones; row 3 (image row 5) is inside. Columns 6 -> 11:
  // column 5 reads source 2.5, inside.
  EXPECT_FLOAT_EQ(m[2][5].item<float>(), 0.0f);
  EXPECT_NEAR(m[3][5].item<float>(), 1.5 * 6 / 7 - 0.5, 1e-6);
  EXPECT_FLOAT_EQ(m[5][5].item<float>(), 1.0f);
  EXPECT_TRUE(at::all(m >= 0).item<bool>() && at::all(m <= 1).item<bool>());
}

TEST(PasteMasks, BoxesAreClippedToTheImage) {
  const at::Tensor masks = at::ones({3, 1, 5, 5});
  // Over the top-left corner, over the bottom-right corner, and outside.
  const at::Tensor out =
      paste_masks_in_image(masks, boxes_of({-3, -3, 4, 4, 3, 3, 10, 10, 20, 20, 25, 25}), 6, 6, /*padding=*/0);
  ASSERT_EQ(out.sizes(), (at::IntArrayRef{3, 1, 6, 6}));
  at::Tensor top_left = at::zeros({6, 6});
  top_left.slice(0, 0, 5).slice(1, 0, 5).fill_(1);
  EXPECT_TRUE(at::equal(out[0][0], top_left));
  at::Tensor bottom_right = at::zeros({6, 6});
  bottom_right.slice(0, 3).slice(1, 3).fill_(1);
  EXPECT_TRUE(at::equal(out[1][0], bottom_right));
  EXPECT_EQ(out[2].abs().sum().item<float>(), 0);
}

TEST(PasteMasks, ResizedMaskKeepsItsOrientation) {
  // A 2x2 mask with a single hot top-left cell, pasted 1:1 into a 2x2 box
  // (x1 = x2 - 1): the hot cell lands at the box's top-left pixel.
  const at::Tensor mask = at::tensor(std::vector<float>{1, 0, 0, 0}).view({1, 1, 2, 2});
  const at::Tensor out = paste_masks_in_image(mask, boxes_of({1, 2, 2, 3}), 5, 5, 0);
  at::Tensor expected = at::zeros({5, 5});
  expected[2][1] = 1;
  EXPECT_TRUE(at::equal(out[0][0], expected));
}

TEST(PasteMasks, NoMasksAndBadShapes) {
  const at::Tensor none = paste_masks_in_image(at::zeros({0, 1, 28, 28}), at::zeros({0, 4}), 7, 9);
  EXPECT_EQ(none.sizes(), (at::IntArrayRef{0, 1, 7, 9}));
  EXPECT_THROW(paste_masks_in_image(at::zeros({2, 1, 4, 4}), at::zeros({1, 4}), 7, 9), c10::Error);
  EXPECT_THROW(paste_masks_in_image(at::zeros({1, 4, 4}), at::zeros({1, 4}), 7, 9), c10::Error);
}

}  // namespace
}  // namespace dtrain::vision::ops
