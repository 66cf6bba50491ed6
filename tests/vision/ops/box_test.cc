// Box arithmetic, the box coder and NMS against hand-computed cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "vision/ops/box_coder.h"
#include "vision/ops/box_ops.h"
#include "vision/ops/nms.h"

namespace dtrain::vision::ops {
namespace {

at::Tensor boxes_of(const std::vector<std::vector<float>>& rows) {
  at::Tensor t = at::empty({static_cast<int64_t>(rows.size()), 4}, at::kFloat);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (int j = 0; j < 4; ++j) t[i][j] = rows[i][j];
  }
  return t;
}

at::Tensor floats(const std::vector<float>& values) { return at::tensor(at::ArrayRef<float>(values), at::kFloat); }

std::vector<int64_t> indices(const at::Tensor& t) {
  EXPECT_EQ(t.scalar_type(), at::kLong);
  const at::Tensor c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(BoxOps, AreaIsWidthTimesHeightWithoutPlusOne) {
  const at::Tensor area = box_area(boxes_of({{0, 0, 2, 3}, {1, 1, 1, 5}, {2, 2, 4.5, 3}}));
  EXPECT_FLOAT_EQ(area[0].item<float>(), 6.0f);
  EXPECT_FLOAT_EQ(area[1].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(area[2].item<float>(), 2.5f);
}

TEST(BoxOps, IouHandComputedCases) {
  const at::Tensor a = boxes_of({{0, 0, 2, 2}});
  const at::Tensor others = boxes_of({
      {1, 1, 3, 3},          // overlap 1, union 7
      {2, 0, 4, 2},          // touching edge: intersection 0
      {0.5, 0.5, 1.5, 1.5},  // contained: 1 / 4
      {0, 0, 2, 2},          // identical
      {5, 5, 6, 6},          // disjoint
  });
  const at::Tensor iou = box_iou(a, others);
  ASSERT_EQ(iou.sizes(), (at::IntArrayRef{1, 5}));
  EXPECT_FLOAT_EQ(iou[0][0].item<float>(), 1.0f / 7.0f);
  EXPECT_FLOAT_EQ(iou[0][1].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(iou[0][2].item<float>(), 0.25f);
  EXPECT_FLOAT_EQ(iou[0][3].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(iou[0][4].item<float>(), 0.0f);
}

TEST(BoxOps, IouIsPairwiseAndSymmetric) {
  const at::Tensor b1 = boxes_of({{0, 0, 2, 2}, {1, 1, 4, 4}});
  const at::Tensor b2 = boxes_of({{1, 1, 3, 3}, {0, 0, 1, 1}, {3, 3, 4, 4}});
  const at::Tensor iou = box_iou(b1, b2);
  ASSERT_EQ(iou.sizes(), (at::IntArrayRef{2, 3}));
  EXPECT_TRUE(at::allclose(iou, box_iou(b2, b1).t()));
  EXPECT_FLOAT_EQ(iou[1][0].item<float>(), 4.0f / 9.0f);
  EXPECT_FLOAT_EQ(iou[1][2].item<float>(), 1.0f / 9.0f);
}

TEST(BoxOps, ZeroAreaBoxesGiveIouZeroNotNan) {
  const at::Tensor degenerate = boxes_of({{1, 1, 1, 1}, {0, 2, 3, 2}});
  const at::Tensor iou_self = box_iou(degenerate, degenerate);
  EXPECT_FALSE(at::isnan(iou_self).any().item<bool>());
  EXPECT_TRUE(at::equal(iou_self, at::zeros({2, 2})));
  const at::Tensor iou_other = box_iou(degenerate, boxes_of({{0, 0, 2, 2}}));
  EXPECT_TRUE(at::equal(iou_other, at::zeros({2, 1})));
}

TEST(BoxOps, ClipBoxesClampsXToWidthAndYToHeight) {
  const at::Tensor clipped = clip_boxes_to_image(boxes_of({{-1, -2, 5, 7}, {1, 1, 2, 2}}), 4, 3);
  EXPECT_TRUE(at::equal(clipped, boxes_of({{0, 0, 3, 4}, {1, 1, 2, 2}})));
  // Any leading shape works: [2, 1, 4].
  const at::Tensor batched = clip_boxes_to_image(boxes_of({{-1, -2, 5, 7}, {1, 1, 2, 2}}).unsqueeze(1), 4, 3);
  EXPECT_EQ(batched.sizes(), (at::IntArrayRef{2, 1, 4}));
  EXPECT_TRUE(at::equal(batched.squeeze(1), clipped));
}

TEST(BoxOps, RemoveSmallBoxesKeepsBoxesAtLeastMinSize) {
  const at::Tensor boxes = boxes_of({{0, 0, 1, 1}, {0, 0, 0.5, 3}, {0, 0, 3, 0.9}, {2, 2, 4, 5}});
  EXPECT_EQ(indices(remove_small_boxes(boxes, 1.0)), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(indices(remove_small_boxes(boxes, 0.0)), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(BoxCoder, DefaultClipIsLogOf1000Over16) {
  const BoxCoder coder({1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(coder.bbox_xform_clip(), std::log(1000.0 / 16.0));
}

TEST(BoxCoder, EncodeHandComputed) {
  const BoxCoder coder({1, 1, 1, 1});
  const at::Tensor codes = coder.encode(boxes_of({{5, 5, 25, 15}}), boxes_of({{0, 0, 10, 10}}));
  ASSERT_EQ(codes.sizes(), (at::IntArrayRef{1, 4}));
  EXPECT_FLOAT_EQ(codes[0][0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(codes[0][1].item<float>(), 0.5f);
  EXPECT_FLOAT_EQ(codes[0][2].item<float>(), std::log(2.0f));
  EXPECT_FLOAT_EQ(codes[0][3].item<float>(), 0.0f);

  const BoxCoder weighted({10, 10, 5, 5});
  const at::Tensor scaled = weighted.encode(boxes_of({{5, 5, 25, 15}}), boxes_of({{0, 0, 10, 10}}));
  EXPECT_TRUE(at::allclose(scaled, codes * floats({10, 10, 5, 5})));
}

TEST(BoxCoder, EncodeThenDecodeReturnsTheBoxes) {
  at::manual_seed(7);
  const int64_t n = 64;
  const at::Tensor xy = at::rand({n, 2}) * 200 + 10;
  const at::Tensor proposals = at::cat({xy, xy + at::rand({n, 2}) * 100 + 1}, 1);
  const at::Tensor gt_xy = at::rand({n, 2}) * 200 + 10;
  const at::Tensor gt = at::cat({gt_xy, gt_xy + at::rand({n, 2}) * 100 + 1}, 1);
  const BoxCoder coder({10, 10, 5, 5});
  const at::Tensor decoded = coder.decode(coder.encode(gt, proposals), proposals);
  ASSERT_EQ(decoded.sizes(), gt.sizes());
  EXPECT_TRUE(at::allclose(decoded, gt, /*rtol=*/1e-5, /*atol=*/0));
}

TEST(BoxCoder, DecodeClampsHugeDwAndDh) {
  const BoxCoder coder({1, 1, 1, 1});
  // Two classes per box: the first with huge dw/dh (clamped), the second plain.
  at::Tensor codes = at::zeros({1, 8});
  codes[0][2] = 100;
  codes[0][3] = 100;
  codes[0][6] = std::log(2.0f);
  const at::Tensor decoded = coder.decode(codes, boxes_of({{0, 0, 16, 16}}));
  ASSERT_EQ(decoded.sizes(), (at::IntArrayRef{1, 8}));
  // exp(clip) * 16 = 1000 around the centre (8, 8).
  EXPECT_TRUE(at::allclose(decoded[0].slice(0, 0, 4), floats({-492, -492, 508, 508}), 1e-5, 1e-3));
  EXPECT_TRUE(at::allclose(decoded[0].slice(0, 4, 8), floats({-8, 0, 24, 16}), 1e-5, 1e-4));
  EXPECT_FALSE(at::isinf(decoded).any().item<bool>());
}

TEST(Nms, SuppressesOverlapsAndSortsByScore) {
  const at::Tensor boxes = boxes_of({{20, 20, 30, 30}, {0, 0, 10, 10}, {1, 1, 11, 11}});
  // IoU(1, 2) = 81 / 119.
  EXPECT_EQ(indices(nms(boxes, floats({0.7f, 0.9f, 0.8f}), 0.5)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(indices(nms(boxes, floats({0.7f, 0.9f, 0.8f}), 0.7)), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(indices(nms(boxes, floats({0.7f, 0.8f, 0.9f}), 0.5)), (std::vector<int64_t>{2, 0}));
}

TEST(Nms, IouEqualToThresholdIsKept) {
  // The second box lies inside the first with half its area: IoU exactly 0.5.
  const at::Tensor boxes = boxes_of({{0, 0, 4, 2}, {0, 0, 2, 2}});
  const at::Tensor scores = floats({0.9f, 0.8f});
  EXPECT_EQ(indices(nms(boxes, scores, 0.5)), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(indices(nms(boxes, scores, 0.49)), (std::vector<int64_t>{0}));
}

TEST(Nms, ComparesTheFloatIouWithTheThresholdAsADouble) {
  // IoU 30 / 100 in float is 0.30000001 (float(0.3) lies above 0.3): above a threshold of
  // 0.3, as torchvision's float-against-double comparison has it. 70 / 100 is 0.69999999
  // (float(0.7) lies below 0.7): not above 0.7.
  const at::Tensor scores = floats({0.9f, 0.8f});
  EXPECT_EQ(indices(nms(boxes_of({{0, 0, 10, 10}, {0, 0, 10, 3}}), scores, 0.3)), (std::vector<int64_t>{0}));
  EXPECT_EQ(indices(nms(boxes_of({{0, 0, 10, 10}, {0, 0, 10, 7}}), scores, 0.7)), (std::vector<int64_t>{0, 1}));
}

// NMS by its definition, one pair at a time: in descending score order (ties in input order),
// a box is kept unless a kept box before it overlaps it by more than the threshold.
template <typename T>
std::vector<int64_t> greedy_nms(const at::Tensor& boxes, const at::Tensor& scores, double threshold) {
  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const auto b = boxes.accessor<T, 2>();
  std::vector<int64_t> kept;
  for (int64_t r = 0; r < order.size(0); ++r) {
    const int64_t j = order[r].item<int64_t>();
    bool suppressed = false;
    for (const int64_t i : kept) {
      const T w = std::max(static_cast<T>(0), std::min(b[i][2], b[j][2]) - std::max(b[i][0], b[j][0]));
      const T h = std::max(static_cast<T>(0), std::min(b[i][3], b[j][3]) - std::max(b[i][1], b[j][1]));
      const T inter = w * h;
      const T area_i = (b[i][2] - b[i][0]) * (b[i][3] - b[i][1]);
      const T area_j = (b[j][2] - b[j][0]) * (b[j][3] - b[j][1]);
      suppressed = suppressed || inter / (area_i + area_j - inter) > threshold;
    }
    if (!suppressed) kept.push_back(j);
  }
  return kept;
}

TEST(Nms, ManyBoxesAgreeWithTheDefinition) {
  // Clusters of boxes as a detector proposes them, scores with ties, in float and double.
  at::manual_seed(5);
  const at::Tensor centres = at::rand({1200, 2}) * 40 + (at::randint(0, 6, {1200, 1}) * 30).to(at::kFloat);
  const at::Tensor sizes = at::rand({1200, 2}) * 12 + 1;
  const at::Tensor boxes = at::cat({centres - sizes / 2, centres + sizes / 2}, 1);
  const at::Tensor scores = (at::rand({1200}) * 50).round() / 50;
  for (const double threshold : {0.3, 0.5, 0.7}) {
    EXPECT_EQ(indices(nms(boxes, scores, threshold)), greedy_nms<float>(boxes, scores, threshold)) << threshold;
    const at::Tensor boxes64 = boxes.to(at::kDouble), scores64 = scores.to(at::kDouble);
    EXPECT_EQ(indices(nms(boxes64, scores64, threshold)), greedy_nms<double>(boxes64, scores64, threshold))
        << threshold;
  }
}

TEST(Nms, EqualScoresKeepInputOrder) {
  const at::Tensor disjoint = boxes_of({{0, 0, 1, 1}, {2, 2, 3, 3}, {4, 4, 5, 5}});
  EXPECT_EQ(indices(nms(disjoint, floats({0.5f, 0.5f, 0.5f}), 0.5)), (std::vector<int64_t>{0, 1, 2}));
  const at::Tensor overlapping = boxes_of({{0, 0, 10, 10}, {0, 0, 10, 9}, {0, 0, 9, 10}});
  EXPECT_EQ(indices(nms(overlapping, floats({0.5f, 0.5f, 0.5f}), 0.5)), (std::vector<int64_t>{0}));
  EXPECT_EQ(indices(nms(overlapping, floats({0.4f, 0.5f, 0.5f}), 0.5)), (std::vector<int64_t>{1}));
}

TEST(Nms, EmptyInputGivesEmptyInt64) {
  const at::Tensor kept = nms(at::empty({0, 4}), at::empty({0}), 0.5);
  EXPECT_EQ(kept.scalar_type(), at::kLong);
  EXPECT_EQ(kept.numel(), 0);
  const at::Tensor batched = batched_nms(at::empty({0, 4}), at::empty({0}), at::empty({0}, at::kLong), 0.5);
  EXPECT_EQ(batched.scalar_type(), at::kLong);
  EXPECT_EQ(batched.numel(), 0);
}

TEST(Nms, ZeroAreaBoxesDoNotSuppressEachOther) {
  const at::Tensor boxes = boxes_of({{1, 1, 1, 1}, {1, 1, 1, 1}});
  EXPECT_EQ(indices(nms(boxes, floats({0.9f, 0.8f}), 0.5)), (std::vector<int64_t>{0, 1}));
}

TEST(Nms, RejectsMismatchedScores) {
  EXPECT_THROW(nms(boxes_of({{0, 0, 1, 1}}), floats({0.1f, 0.2f}), 0.5), c10::Error);
}

TEST(Nms, BatchedNeverSuppressesAcrossCategories) {
  const at::Tensor boxes = boxes_of({{0, 0, 10, 10}, {0, 0, 10, 10}, {1, 1, 10, 10}, {0, 0, 10, 10}});
  const at::Tensor scores = floats({0.9f, 0.8f, 0.7f, 0.95f});
  const at::Tensor idxs = at::tensor(at::ArrayRef<int64_t>({0, 1, 0, 2}), at::kLong);
  // Each category keeps its best box; box 2 loses to box 0 (same category).
  EXPECT_EQ(indices(batched_nms(boxes, scores, idxs, 0.5)), (std::vector<int64_t>{3, 0, 1}));
  // All in one category: only the best survives.
  EXPECT_EQ(indices(batched_nms(boxes, scores, at::zeros({4}, at::kLong), 0.5)), (std::vector<int64_t>{3}));
  // Matches running nms per category.
  for (int64_t c = 0; c < 3; ++c) {
    const at::Tensor members = at::nonzero(idxs == c).view(-1);
    const at::Tensor per_class =
        members.index_select(0, nms(boxes.index_select(0, members), scores.index_select(0, members), 0.5));
    const at::Tensor batched = batched_nms(boxes, scores, idxs, 0.5);
    const at::Tensor batched_in_class =
        batched.index_select(0, at::nonzero(idxs.index_select(0, batched) == c).view(-1));
    EXPECT_TRUE(at::equal(per_class, batched_in_class)) << "category " << c;
  }
}

}  // namespace
}  // namespace dtrain::vision::ops
