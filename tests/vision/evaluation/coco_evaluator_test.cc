#include "vision/evaluation/coco_evaluator.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/numpy_arithmetic.h"

namespace dtrain::vision {
namespace {

// A ground truth of one 100x100 image per entry of `boxes` ("x y w h crowd")
// and detections "image x y w h score", all of category 1.
struct Scenario {
  std::string gt_json;
  std::string dt_json;
};

Scenario make(const std::vector<std::vector<double>>& gts, const std::vector<std::vector<double>>& dts) {
  std::string images, anns, results;
  int max_image = 1;
  for (const auto& g : gts) max_image = std::max(max_image, int(g[0]));
  for (const auto& d : dts) max_image = std::max(max_image, int(d[0]));
  for (int i = 1; i <= max_image; ++i) {
    images += fmt::format("{}{{\"id\": {}, \"height\": 100, \"width\": 100}}", i > 1 ? "," : "", i);
  }
  for (size_t n = 0; n < gts.size(); ++n) {
    const auto& g = gts[n];  // image x y w h crowd
    anns += fmt::format(
        "{}{{\"id\": {}, \"image_id\": {}, \"category_id\": 1, \"bbox\": [{}, {}, {}, {}], "
        "\"area\": {}, \"iscrowd\": {}}}",
        n ? "," : "", n + 1, int(g[0]), g[1], g[2], g[3], g[4], g[3] * g[4], int(g[5]));
  }
  for (size_t n = 0; n < dts.size(); ++n) {
    const auto& d = dts[n];  // image x y w h score
    results += fmt::format("{}{{\"image_id\": {}, \"category_id\": 1, \"bbox\": [{}, {}, {}, {}], \"score\": {}}}",
                           n ? "," : "", int(d[0]), d[1], d[2], d[3], d[4], d[5]);
  }
  return {fmt::format(R"({{"images": [{}], "categories": [{{"id": 1, "name": "thing"}}],
                          "annotations": [{}]}})",
                      images, anns),
          "[" + results + "]"};
}

std::vector<double> stats_of(const Scenario& s, int threads = 1) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(s.gt_json, "gt");
  const CocoDetections dt = CocoDetections::parse(gt, s.dt_json, "dt");
  CocoEvaluator evaluator(gt, dt, IouType::kBbox, threads);
  evaluator.evaluate();
  evaluator.accumulate();
  return evaluator.summarize().values();
}

TEST(EvaluationParams, ThresholdsAreNumpyLinspace) {
  const auto p = EvaluationParams::coco_defaults(IouType::kSegm);
  ASSERT_EQ(p.iou_thresholds.size(), 10u);
  ASSERT_EQ(p.recall_thresholds.size(), 101u);
  EXPECT_EQ(p.iou_thresholds[0], 0.5);
  EXPECT_EQ(p.iou_thresholds[5], 0.75);  // found by equality in summarize
  EXPECT_EQ(p.iou_thresholds[9], 0.95);
  const double step = (0.95 - 0.5) / 9;
  EXPECT_EQ(p.iou_thresholds[3], 3 * step + 0.5);
  EXPECT_EQ(p.recall_thresholds[7], 7 * 0.01);
  EXPECT_EQ(p.recall_thresholds[100], 1.0);
  EXPECT_EQ(p.area_ranges[0].max, 1e10);
  EXPECT_EQ(p.area_ranges[2].min, 1024);
  EXPECT_EQ(p.area_ranges[2].max, 9216);
}

TEST(NumpyArithmetic, PairwiseSumOrder) {
  std::vector<double> v(1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0 / double(i + 1);
  double naive = 0;
  for (double x : v) naive += x;
  EXPECT_NEAR(numpy_sum(v), naive, 1e-12);
  EXPECT_EQ(numpy_mean(std::vector<double>{1, 2, 3, 4}), 2.5);
}

TEST(CocoEvaluator, PerfectDetectionScoresOneWhereThereIsGroundTruth) {
  // One small (10x10 = 100 < 32²) object found exactly.
  const auto s = stats_of(make({{1, 10, 10, 10, 10, 0}}, {{1, 10, 10, 10, 10, 0.9}}));
  // Precision is tp / (tp + fp + eps) as in pycocotools, so "1" is 1 - 2^-52.
  const std::vector<double> expected = {1, 1, 1, 1, -1, -1, 1, 1, 1, 1, -1, -1};
  ASSERT_EQ(s.size(), expected.size());
  for (size_t i = 0; i < s.size(); ++i) EXPECT_DOUBLE_EQ(s[i], expected[i]) << i;
  EXPECT_EQ(s[0], 1 / (1 + std::numeric_limits<double>::epsilon()));
}

TEST(CocoEvaluator, IouBetweenThresholdsCountsForTheLowerOnes) {
  // IoU 0.58 (58/100): a hit at .50 and .55, a miss at the eight others.
  const auto s = stats_of(make({{1, 0, 0, 10, 10, 0}}, {{1, 0, 0, 10, 5.8, 0.9}}));
  EXPECT_DOUBLE_EQ(s[0], 0.2);
  EXPECT_DOUBLE_EQ(s[1], 1.0);
  EXPECT_EQ(s[2], 0.0);
  EXPECT_DOUBLE_EQ(s[8], 0.2);
}

TEST(CocoEvaluator, MaxDetsLimitsRecallPerImage) {
  // Two objects in one image, both found; with one detection allowed only one counts.
  const auto s = stats_of(
      make({{1, 0, 0, 40, 40, 0}, {1, 50, 50, 40, 40, 0}}, {{1, 0, 0, 40, 40, 0.9}, {1, 50, 50, 40, 40, 0.8}}));
  EXPECT_EQ(s[6], 0.5);  // AR1
  EXPECT_EQ(s[7], 1.0);  // AR10
  EXPECT_DOUBLE_EQ(s[0], 1.0);
}

TEST(CocoEvaluator, DetectionOnACrowdIsIgnoredNotAFalsePositive) {
  // A crowd region and a regular object; a detection inside the crowd is
  // neither a hit nor a false positive, even with the best score.
  const auto with_crowd_hit = stats_of(
      make({{1, 0, 0, 50, 50, 1}, {1, 60, 60, 30, 30, 0}}, {{1, 5, 5, 20, 20, 0.99}, {1, 60, 60, 30, 30, 0.5}}));
  EXPECT_DOUBLE_EQ(with_crowd_hit[0], 1.0);
  // The same detection without the crowd is a false positive ranked first.
  const auto without = stats_of(make({{1, 60, 60, 30, 30, 0}}, {{1, 5, 5, 20, 20, 0.99}, {1, 60, 60, 30, 30, 0.5}}));
  EXPECT_LT(without[0], 1.0);
  EXPECT_NEAR(without[0], 0.5, 1e-12);
}

TEST(CocoEvaluator, FalsePositivesLowerPrecisionAndMissesLowerRecall) {
  // Image 1: found (score .9). Image 2: a false positive (score .8) and a miss.
  const auto s =
      stats_of(make({{1, 0, 0, 50, 50, 0}, {2, 0, 0, 50, 50, 0}}, {{1, 0, 0, 50, 50, 0.9}, {2, 60, 60, 20, 20, 0.8}}));
  // Recall reaches 0.5 at precision 1: 51 of 101 recall thresholds.
  EXPECT_NEAR(s[0], 51.0 / 101.0, 1e-15);
  EXPECT_EQ(s[8], 0.5);
  // The small false positive is out of the medium range and unmatched: ignored there.
  EXPECT_NEAR(s[4], 51.0 / 101.0, 1e-15);
}

TEST(CocoEvaluator, NoDetectionsGivesZeroAndNoGroundTruthGivesMinusOne) {
  const auto s = stats_of(make({{1, 0, 0, 50, 50, 0}}, {}));
  EXPECT_EQ(s[0], 0.0);
  EXPECT_EQ(s[3], -1.0);
  const auto only_detections = stats_of(make({}, {{1, 0, 0, 50, 50, 0.4}}));
  for (double v : only_detections) EXPECT_EQ(v, -1.0);
}

TEST(CocoEvaluator, CategoriesOutsideTheGroundTruthAreNotEvaluated) {
  Scenario s = make({{1, 0, 0, 50, 50, 0}}, {{1, 0, 0, 50, 50, 0.9}});
  s.dt_json.insert(1, R"({"image_id": 1, "category_id": 5, "bbox": [0, 0, 50, 50], "score": 1},)");
  EXPECT_DOUBLE_EQ(stats_of(s)[0], 1.0);
}

TEST(CocoEvaluator, SummaryLayoutIsPycocotools) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(make({{1, 0, 0, 50, 50, 0}}, {}).gt_json, "gt");
  const CocoDetections dt = CocoDetections::parse(gt, "[]", "dt");
  CocoEvaluator evaluator(gt, dt, IouType::kBbox);
  evaluator.evaluate();
  evaluator.accumulate();
  const CocoSummary summary = evaluator.summarize();
  EXPECT_EQ(summary.stats[0].line, " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.000");
  EXPECT_EQ(summary.stats[1].line, " Average Precision  (AP) @[ IoU=0.50      | area=   all | maxDets=100 ] = 0.000");
  EXPECT_EQ(summary.stats[3].line, " Average Precision  (AP) @[ IoU=0.50:0.95 | area= small | maxDets=100 ] = -1.000");
  EXPECT_EQ(summary.stats[6].line, " Average Recall     (AR) @[ IoU=0.50:0.95 | area=   all | maxDets=  1 ] = 0.000");
  ASSERT_EQ(summary.per_category.size(), 1u);
  EXPECT_EQ(summary.per_category[0].name, "thing");
  EXPECT_EQ(summary.per_category[0].ap, 0.0);
}

TEST(CocoEvaluator, NeedsEvaluateBeforeAccumulate) {
  const CocoGroundTruth gt = CocoGroundTruth::parse(make({{1, 0, 0, 50, 50, 0}}, {}).gt_json, "gt");
  const CocoDetections dt = CocoDetections::parse(gt, "[]", "dt");
  CocoEvaluator evaluator(gt, dt, IouType::kBbox);
  EXPECT_THROW(evaluator.accumulate(), CocoError);
  EXPECT_THROW(evaluator.summarize(), CocoError);
}

}  // namespace
}  // namespace dtrain::vision
