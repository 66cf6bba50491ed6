#include "vision/report/category_table.h"

#include <gtest/gtest.h>

#include <string>

#include "vision/report/category_table_format.h"
#include "tests/vision/report/report_test_data.h"

namespace dtrain::vision {
namespace {

using testing::BoxScenario;
using testing::Evaluation;
using testing::fake100;

class CategoryTableGolden : public ::testing::TestWithParam<IouType> {};

TEST_P(CategoryTableGolden, AllRowIsTheSummaryAndApIsTheSummarysPerCategoryAp) {
  const Evaluation& e = fake100(GetParam());
  const CategoryTable table = category_table(*e.evaluator, e.summary);
  ASSERT_EQ(table.rows.size(), 80u);
  for (size_t s = 0; s < 6; ++s) EXPECT_EQ(table.all.ap[s], e.summary.stats[s].value) << e.summary.stats[s].name;
  uint64_t ground_truths = 0, detections = 0;
  for (size_t k = 0; k < table.rows.size(); ++k) {
    EXPECT_EQ(table.rows[k].id, e.summary.per_category[k].category_id);
    EXPECT_EQ(table.rows[k].ap[0], e.summary.per_category[k].ap) << table.rows[k].name;
    ground_truths += table.rows[k].ground_truths;
    detections += table.rows[k].detections;
  }
  EXPECT_EQ(table.all.ground_truths, ground_truths);
  EXPECT_EQ(table.all.detections, detections);
  EXPECT_GT(ground_truths, 0u);
  EXPECT_GT(detections, 0u);
}

// pycocotools' COCOeval with params.catIds = [k] is the evaluation of a ground
// truth that holds category k alone: every statistic of row k must be that
// evaluation's summary, to the last bit.
TEST_P(CategoryTableGolden, EachRowIsTheEvaluationRestrictedToItsCategory) {
  const IouType type = GetParam();
  const Evaluation& e = fake100(type);
  const CategoryTable table = category_table(*e.evaluator, e.summary);
  const nlohmann::json dataset = testing::read_json(testing::kFake100 + "/instances_val2014_100.json");
  const nlohmann::json results = testing::read_json(testing::fake100_results(type));
  size_t with_ground_truth = 0;
  for (const CategoryRow& row : table.rows) {
    nlohmann::json one = dataset;
    one["categories"] = nlohmann::json::array();
    for (const auto& c : dataset["categories"]) {
      if (c["id"] == row.id) one["categories"].push_back(c);
    }
    one["annotations"] = nlohmann::json::array();
    for (const auto& a : dataset["annotations"]) {
      if (a["category_id"] == row.id) one["annotations"].push_back(a);
    }
    const Evaluation restricted(CocoGroundTruth::parse(one.dump(), "one category"), results, type);
    const CategoryTable single = category_table(*restricted.evaluator, restricted.summary);
    ASSERT_EQ(single.rows.size(), 1u);
    for (size_t s = 0; s < 6; ++s) {
      EXPECT_EQ(row.ap[s], restricted.summary.stats[s].value) << row.name << " " << restricted.summary.stats[s].name;
      EXPECT_EQ(single.rows[0].ap[s], single.all.ap[s]);
    }
    EXPECT_EQ(row.ground_truths, single.rows[0].ground_truths);
    EXPECT_EQ(row.detections, single.rows[0].detections);
    with_ground_truth += row.ap[0] > -1;
  }
  EXPECT_GT(with_ground_truth, 20u);  // the comparison saw real numbers, not only -1
}

INSTANTIATE_TEST_SUITE_P(BboxAndSegm, CategoryTableGolden, ::testing::Values(IouType::kBbox, IouType::kSegm),
                         [](const auto& info) { return std::string(iou_type_name(info.param)); });

// c1: found; c2: ground truth, no detection (0, as pycocotools: precision 0 at
// every recall threshold); c3: a detection, no ground truth (-1).
BoxScenario found_missed_and_spurious() {
  BoxScenario s;
  s.categories = 3;
  s.gts = {{1, 1, 10, 10, 10, 10}, {1, 2, 50, 50, 10, 10}};
  s.dts = {{1, 1, 10, 10, 10, 10, 0.9}, {1, 3, 70, 70, 10, 10, 0.8}};
  return s;
}

TEST(CategoryTable, NoDetectionsIsZeroAndNoGroundTruthIsMinusOne) {
  const auto e = found_missed_and_spurious().evaluate();
  const CategoryTable table = category_table(*e->evaluator, e->summary);
  ASSERT_EQ(table.rows.size(), 3u);
  using Ap = std::array<double, 6>;
  // The boxes are small (area 100): medium and large have no ground truth.
  // Precision is tp / (tp + fp + eps) as in pycocotools, so "1" is a little less.
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(table.rows[0].ap[i], 1) << i;
  EXPECT_EQ(table.rows[0].ap[4], -1);
  EXPECT_EQ(table.rows[0].ap[5], -1);
  EXPECT_EQ(table.rows[1].ap, (Ap{0, 0, 0, 0, -1, -1}));
  EXPECT_EQ(table.rows[2].ap, (Ap{-1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(table.rows[0].ground_truths, 1u);
  EXPECT_EQ(table.rows[0].detections, 1u);
  EXPECT_EQ(table.rows[1].ground_truths, 1u);
  EXPECT_EQ(table.rows[1].detections, 0u);
  EXPECT_EQ(table.rows[2].ground_truths, 0u);
  EXPECT_EQ(table.rows[2].detections, 1u);
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(table.all.ap[i], 0.5) << i;
  EXPECT_EQ(table.all.ap[4], -1);
  EXPECT_EQ(table.all.ap[5], -1);
  EXPECT_EQ(table.all.ground_truths, 2u);
  EXPECT_EQ(table.all.detections, 2u);
}

TEST(CategoryTable, CrowdsAreNotCountedAsGroundTruth) {
  BoxScenario s;
  s.gts = {{1, 1, 10, 10, 10, 10}, {1, 1, 40, 40, 30, 30, 1}};
  s.dts = {{1, 1, 10, 10, 10, 10, 0.9}};
  const auto e = s.evaluate();
  const CategoryTable table = category_table(*e->evaluator, e->summary);
  EXPECT_EQ(table.rows[0].ground_truths, 1u);
}

TEST(CategoryTableFormat, CsvHasEveryCategoryAtFullPrecisionAndQuotesNames) {
  CategoryTable table;
  table.rows.push_back({1, "plain", {1.0 / 3, 0.5, -1, 0, 0.25, -1}, 3, 7});
  table.rows.push_back({5, "comma, \"quoted\"", {-1, -1, -1, -1, -1, -1}, 0, 2});
  EXPECT_EQ(category_table_csv(table),
            "id,name,AP,AP50,AP75,APs,APm,APl,ground_truths,detections\n"
            "1,plain,0.3333333333333333,0.5,-1,0,0.25,-1,3,7\n"
            "5,\"comma, \"\"quoted\"\"\",-1,-1,-1,-1,-1,-1,0,2\n");
}

TEST(CategoryTableFormat, MarkdownHasTheAllRowFirstThenCategoriesByAp) {
  const auto e = found_missed_and_spurious().evaluate();
  const CategoryTable table = category_table(*e->evaluator, e->summary);
  const std::string md = category_table_markdown(table, "Errors: none.\n");
  EXPECT_EQ(md.rfind("# COCO bbox evaluation per category\n", 0), 0u) << md;
  const auto all = md.find("|  | **all categories** | 0.500 | 0.500 | 0.500 | 0.500 | n/a | n/a | 2 | 2 |\n");
  const auto c1 = md.find("| 1 | c1 | 1.000 | 1.000 | 1.000 | 1.000 | n/a | n/a | 1 | 1 |\n");
  const auto c2 = md.find("| 2 | c2 | 0.000 |");
  const auto c3 = md.find("| 3 | c3 | n/a |");
  ASSERT_NE(all, std::string::npos) << md;
  ASSERT_NE(c1, std::string::npos) << md;
  ASSERT_NE(c2, std::string::npos) << md;
  ASSERT_NE(c3, std::string::npos) << md;
  EXPECT_LT(all, c1);
  EXPECT_LT(c1, c2);
  EXPECT_LT(c2, c3);
  EXPECT_NE(md.find("\nErrors: none.\n"), std::string::npos);
}

TEST(CategoryTableGoldenMarkdown, SortedByApDescending) {
  const Evaluation& e = fake100(IouType::kBbox);
  const auto rows = rows_by_ap(category_table(*e.evaluator, e.summary));
  ASSERT_EQ(rows.size(), 80u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].ap[0], rows[i].ap[0]);
}

}  // namespace
}  // namespace dtrain::vision
