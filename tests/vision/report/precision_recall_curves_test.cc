#include "vision/report/precision_recall_curves.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "tests/vision/report/report_test_data.h"

namespace dtrain::vision {
namespace {

using testing::BoxScenario;
using testing::Evaluation;
using testing::fake100;

class CurvesGolden : public ::testing::TestWithParam<IouType> {};

// accumulate keeps pycocotools' `scores` beside the precision: -1 exactly where the
// precision is -1, a detection's score elsewhere (0 once recall is out of reach), falling
// as the recall threshold rises.
TEST_P(CurvesGolden, ScoresAreKeptWhereThePrecisionIsRead) {
  const Evaluation& e = fake100(GetParam());
  const AccumulatedEvaluation& acc = e.evaluator->accumulated();
  ASSERT_EQ(acc.scores.size(), acc.precision.size());
  for (size_t m = 0; m < acc.M; ++m) {
    size_t scored = 0;
    for (size_t t = 0; t < acc.T; ++t) {
      for (size_t r = 0; r < acc.R; ++r) {
        for (size_t k = 0; k < acc.K; ++k) {
          for (size_t a = 0; a < acc.A; ++a) {
            const double score = acc.score_at(t, r, k, a, m);
            if (acc.precision_at(t, r, k, a, m) == -1) {
              EXPECT_EQ(score, -1);
            } else {
              EXPECT_GE(score, 0);
            }
            scored += score > 0;
            // Scores fall as recall rises (until the curve ends at 0).
            if (r > 0 && score > 0) {
              EXPECT_LE(score, acc.score_at(t, r - 1, k, a, m));
            }
          }
        }
      }
    }
    EXPECT_GT(scored, 0u) << "maxDets index " << m;
  }
}

TEST_P(CurvesGolden, ApPerThresholdIsTheSummarysAp50AndAp75) {
  const Evaluation& e = fake100(GetParam());
  const PrecisionRecallCurves c = precision_recall_curves(*e.evaluator);
  ASSERT_EQ(c.R(), 101u);
  ASSERT_EQ(c.T(), 10u);
  ASSERT_EQ(c.A(), 4u);
  ASSERT_EQ(c.K(), 80u);
  EXPECT_EQ(c.max_detections, 100);
  const size_t all = c.area_index("all");
  EXPECT_EQ(c.ap[0 * c.A() + all], e.summary.stats[1].value);  // AP50
  EXPECT_EQ(c.ap[5 * c.A() + all], e.summary.stats[2].value);  // AP75
  // AP is the mean over thresholds of ap[t] (every threshold has the same entries).
  for (size_t a = 0; a < c.A(); ++a) {
    double sum = 0;
    for (size_t t = 0; t < c.T(); ++t) sum += c.ap[t * c.A() + a];
    EXPECT_NEAR(sum / c.T(), e.summary.stats[a == 0 ? 0 : 2 + a].value, 1e-12) << c.areas[a].label;
  }
  // The mean curve at IoU .5 is the mean of the categories' curves.
  for (size_t r = 0; r < c.R(); r += 10) {
    double sum = 0;
    size_t n = 0;
    for (size_t k = 0; k < c.K(); ++k) {
      const double v = c.category_precision[(k * c.T() + 0) * c.R() + r];
      if (v > -1) sum += v, ++n;
    }
    EXPECT_NEAR(c.precision[(0 * c.A() + all) * c.R() + r], sum / n, 1e-12) << r;
  }
}

TEST_P(CurvesGolden, JsonHasTheDocumentedShape) {
  const Evaluation& e = fake100(GetParam());
  const PrecisionRecallCurves c = precision_recall_curves(*e.evaluator);
  // Through text, as a dashboard reads it.
  const nlohmann::json j = nlohmann::json::parse(to_json(c).dump());
  EXPECT_EQ(j["iou_type"], std::string(iou_type_name(GetParam())));
  EXPECT_EQ(j["max_detections"], 100);
  ASSERT_EQ(j["recall_thresholds"].size(), 101u);
  EXPECT_EQ(j["recall_thresholds"][0], 0.0);
  EXPECT_EQ(j["recall_thresholds"][100], 1.0);
  ASSERT_EQ(j["iou_thresholds"].size(), 10u);
  ASSERT_EQ(j["areas"].size(), 4u);
  EXPECT_EQ(j["areas"][1]["label"], "small");
  EXPECT_EQ(j["areas"][1]["max"], 1024.0);
  ASSERT_EQ(j["categories"].size(), 80u);
  EXPECT_EQ(j["categories"][0]["name"], "person");
  ASSERT_EQ(j["precision"].size(), 10u);
  for (const auto& by_area : j["precision"]) {
    ASSERT_EQ(by_area.size(), 4u);
    for (const auto& curve : by_area) {
      ASSERT_EQ(curve.size(), 101u);
      for (const auto& v : curve) EXPECT_TRUE(v == -1 || (v >= 0 && v <= 1));
    }
  }
  EXPECT_NEAR(j["precision"][0][0][0].get<double>(), c.precision[0], 5e-7);
  ASSERT_EQ(j["ap"].size(), 10u);
  EXPECT_NEAR(j["ap"][0][0].get<double>(), e.summary.stats[1].value, 5e-7);
  for (const char* name : {"category_precision", "category_scores"}) {
    ASSERT_EQ(j[name].size(), 80u) << name;
    ASSERT_EQ(j[name][0].size(), 10u) << name;
    ASSERT_EQ(j[name][0][0].size(), 101u) << name;
  }
  ASSERT_EQ(j["recall"].size(), 10u);
  ASSERT_EQ(j["recall"][0].size(), 80u);
  ASSERT_EQ(j["recall"][0][0].size(), 4u);
  EXPECT_NEAR(j["recall"][0][0][0].get<double>(), e.evaluator->accumulated().recall_at(0, 0, 0, 2), 5e-7);
}

INSTANTIATE_TEST_SUITE_P(BboxAndSegm, CurvesGolden, ::testing::Values(IouType::kBbox, IouType::kSegm),
                         [](const auto& info) { return std::string(iou_type_name(info.param)); });

TEST(AccumulatedScores, AreTheScoresOfTheRanksWherePrecisionIsRead) {
  // Two objects; ranked: hit (.9), false positive (.8), hit (.7), false positive (.6).
  BoxScenario s;
  s.gts = {{1, 1, 0, 0, 40, 40}, {1, 1, 50, 50, 40, 40}};
  s.dts = {
      {1, 1, 0, 0, 40, 40, 0.9}, {1, 1, 0, 50, 40, 40, 0.8}, {1, 1, 50, 50, 40, 40, 0.7}, {1, 1, 50, 0, 40, 40, 0.6}};
  const auto e = s.evaluate();
  const AccumulatedEvaluation& acc = e->evaluator->accumulated();
  // Recall [.5, .5, 1, 1]; precision made non-increasing [1, 2/3, 2/3, 1/2]:
  // recall thresholds up to .5 read rank 0, the rest rank 2.
  for (size_t r = 0; r <= 100; ++r) {
    EXPECT_EQ(acc.score_at(0, r, 0, 0, 2), r <= 50 ? 0.9 : 0.7) << r;
    EXPECT_NEAR(acc.precision_at(0, r, 0, 0, 2), r <= 50 ? 1.0 : 2.0 / 3.0, 1e-15) << r;
  }
  // maxDets 1: one detection (the hit) per image, recall .5 at most; beyond it, 0.
  EXPECT_EQ(acc.score_at(0, 50, 0, 0, 0), 0.9);
  EXPECT_EQ(acc.score_at(0, 51, 0, 0, 0), 0.0);
  EXPECT_EQ(acc.precision_at(0, 51, 0, 0, 0), 0.0);
}

}  // namespace
}  // namespace dtrain::vision
