#include "vision/report/error_breakdown.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/vision/report/report_test_data.h"

namespace dtrain::vision {
namespace {

using testing::BoxScenario;
using testing::Evaluation;
using testing::fake100;

TEST(ErrorBreakdown, EachFalsePositiveGetsTidesCause) {
  // One image: A (class 1) at 10,10 and B (class 2) at 60,60, both 20x20.
  BoxScenario s;
  s.categories = 2;
  s.gts = {{1, 1, 10, 10, 20, 20}, {1, 2, 60, 60, 20, 20}};
  s.dts = {
      {1, 1, 10, 10, 20, 20, 0.9},  // A: true positive
      {1, 1, 10, 10, 20, 20, 0.8},  // A again: duplicate
      {1, 1, 20, 10, 20, 20, 0.7},  // IoU 1/3 with A: localisation
      {1, 1, 60, 60, 20, 20, 0.6},  // on B, wrong class: classification
      {1, 1, 40, 85, 5, 5, 0.5},    // on nothing: background
      {1, 1, 70, 60, 20, 20, 0.4},  // IoU 1/3 with B only: localisation and classification
  };
  const auto e = s.evaluate();
  const ErrorBreakdown errors = error_breakdown(*e->evaluator, e->gt, e->dt);
  const ErrorCounts& c = errors.total;
  EXPECT_EQ(c.detections, 6u);
  EXPECT_EQ(c.true_positives, 1u);
  EXPECT_EQ(c.false_positives, 5u);
  EXPECT_EQ(c.localisation, 1u);
  EXPECT_EQ(c.classification, 1u);
  EXPECT_EQ(c.duplicate, 1u);
  EXPECT_EQ(c.background, 1u);
  EXPECT_EQ(c.localisation_and_classification, 1u);
  EXPECT_EQ(c.ground_truths, 2u);
  EXPECT_EQ(c.missed, 1u);  // B: nothing of class 2 found it
  ASSERT_EQ(errors.categories.size(), 2u);
  EXPECT_EQ(errors.categories[0].counts.false_positives, 5u);
  EXPECT_EQ(errors.categories[0].counts.missed, 0u);
  EXPECT_EQ(errors.categories[1].counts.detections, 0u);
  EXPECT_EQ(errors.categories[1].counts.missed, 1u);
  EXPECT_EQ(errors.iou_threshold, 0.5);
  EXPECT_EQ(errors.max_detections, 100);

  const nlohmann::json j = nlohmann::json::parse(to_json(errors).dump());
  EXPECT_EQ(j["total"]["localisation_and_classification"], 1);
  EXPECT_EQ(j["categories"][1]["name"], "c2");
  EXPECT_EQ(j["categories"][1]["missed"], 1);
  EXPECT_NE(error_breakdown_markdown(errors).find("5 false positives: 1 localisation, 1 classification, "
                                                  "1 duplicate, 1 background, 1 localisation and classification; "
                                                  "1 of 2 ground truths missed"),
            std::string::npos)
      << error_breakdown_markdown(errors);
}

TEST(ErrorBreakdown, DetectionsOnCrowdsAreNeitherHitsNorErrors) {
  BoxScenario s;
  s.gts = {{1, 1, 0, 0, 50, 50, 1}};
  s.dts = {{1, 1, 5, 5, 20, 20, 0.9}};
  const auto e = s.evaluate();
  const ErrorCounts c = error_breakdown(*e->evaluator, e->gt, e->dt).total;
  EXPECT_EQ(c.detections, 0u);
  EXPECT_EQ(c.false_positives, 0u);
  EXPECT_EQ(c.ground_truths, 0u);
}

class ErrorBreakdownGolden : public ::testing::TestWithParam<IouType> {};

TEST_P(ErrorBreakdownGolden, CountsAddUpAndAgreeWithTheEvaluatorsRecall) {
  const Evaluation& e = fake100(GetParam());
  const ErrorBreakdown errors = error_breakdown(*e.evaluator, e.gt, e.dt);
  const AccumulatedEvaluation& acc = e.evaluator->accumulated();
  ASSERT_EQ(errors.categories.size(), 80u);
  for (size_t k = 0; k < errors.categories.size(); ++k) {
    const ErrorCounts& c = errors.categories[k].counts;
    EXPECT_EQ(c.true_positives + c.false_positives, c.detections);
    EXPECT_EQ(c.localisation + c.classification + c.duplicate + c.background + c.localisation_and_classification,
              c.false_positives);
    EXPECT_EQ(c.true_positives + c.missed, c.ground_truths);
    // Recall at IoU .5, area all, maxDets 100 is what was found of what counts.
    if (c.ground_truths > 0) {
      EXPECT_DOUBLE_EQ(acc.recall_at(0, k, 0, 2), double(c.true_positives) / double(c.ground_truths))
          << errors.categories[k].name;
    }
  }
  EXPECT_GT(errors.total.false_positives, 0u);
  EXPECT_GT(errors.total.localisation, 0u);
}

INSTANTIATE_TEST_SUITE_P(BboxAndSegm, ErrorBreakdownGolden, ::testing::Values(IouType::kBbox, IouType::kSegm),
                         [](const auto& info) { return std::string(iou_type_name(info.param)); });

}  // namespace
}  // namespace dtrain::vision
