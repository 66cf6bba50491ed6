// pycocotools' own numbers on the COCO API's fake results for 100 val2014
// images (tests/data/coco-fake100, see its README): all twelve statistics
// for boxes and masks must agree to 1e-9, and the printed summary must be
// pycocotools' text.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {
namespace {

const std::string kDir = COCO_FAKE100_DIR;

const CocoGroundTruth& ground_truth() {
  static const CocoGroundTruth gt = CocoGroundTruth::load(kDir + "/instances_val2014_100.json");
  return gt;
}

std::string results_path(IouType type) {
  return kDir + "/instances_val2014_fake" + std::string(iou_type_name(type)) + "100_results.json";
}

// The twelve summary lines pycocotools printed for `type` in
// val2014_fake_eval_res.txt. That file comes from an older pycocotools whose
// title column was one character narrower; today's layout (ours) pads
// "Average Precision" and "Average Recall" to 18.
std::string printed_summary(IouType type) {
  std::ifstream in(kDir + "/val2014_fake_eval_res.txt");
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    if (line.rfind("type=", 0) == 0) inside = line == "type=" + std::string(iou_type_name(type));
    if (inside && line.rfind(" Average", 0) == 0) {
      for (const char* title : {"Average Precision", "Average Recall   "}) {
        const auto at = line.find(title);
        if (at == 1 && line.compare(1 + 18, 1, "(") == 0) line.insert(1 + 17, " ");
      }
      out += line + "\n";
    }
  }
  return out;
}

class CocoGolden : public testing::TestWithParam<IouType> {};

TEST_P(CocoGolden, MatchesPycocotoolsStatistics) {
  const IouType type = GetParam();
  std::ifstream in(kDir + "/expected.json");
  const auto expected = nlohmann::json::parse(in)[std::string(iou_type_name(type))].get<std::vector<double>>();
  ASSERT_EQ(expected.size(), 12u);

  const CocoDetections dt = CocoDetections::load(ground_truth(), results_path(type));
  CocoEvaluator evaluator(ground_truth(), dt, type, 2);
  evaluator.evaluate();
  evaluator.accumulate();
  const CocoSummary summary = evaluator.summarize();
  ASSERT_EQ(summary.stats.size(), 12u);
  double max_diff = 0;
  for (size_t i = 0; i < 12; ++i) {
    const double diff = std::fabs(summary.stats[i].value - expected[i]);
    max_diff = std::max(max_diff, diff);
    EXPECT_NEAR(summary.stats[i].value, expected[i], 1e-9) << summary.stats[i].name;
    if (diff != 0) {
      std::printf("  %s: %.17g vs pycocotools %.17g\n", summary.stats[i].name.c_str(), summary.stats[i].value,
                  expected[i]);
    }
  }
  std::printf("%s: 12 statistics match pycocotools, max |diff| = %.3g\n", std::string(iou_type_name(type)).c_str(),
              max_diff);
  // Stronger than the contract above: the same rules in the same order give
  // the same doubles.
  EXPECT_EQ(max_diff, 0.0);
  EXPECT_EQ(summary.text(), printed_summary(type));
  EXPECT_EQ(summary.per_category.size(), 80u);
}

TEST_P(CocoGolden, ResultsDoNotDependOnTheThreadCount) {
  const IouType type = GetParam();
  const CocoDetections dt = CocoDetections::load(ground_truth(), results_path(type));
  CocoEvaluator one(ground_truth(), dt, type, 1), many(ground_truth(), dt, type, 5);
  for (CocoEvaluator* e : {&one, &many}) {
    e->evaluate();
    e->accumulate();
  }
  EXPECT_EQ(one.accumulated().precision, many.accumulated().precision);
  EXPECT_EQ(one.accumulated().recall, many.accumulated().recall);
  EXPECT_EQ(one.summarize().values(), many.summarize().values());
}

INSTANTIATE_TEST_SUITE_P(BboxAndSegm, CocoGolden, testing::Values(IouType::kBbox, IouType::kSegm),
                         [](const auto& info) { return std::string(iou_type_name(info.param)); });

}  // namespace
}  // namespace dtrain::vision
