// Shared by the report tests: the golden fake-100 evaluation, evaluated and
// accumulated once per IoU type, and small hand-made scenarios.
#pragma once

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision::testing {

inline const std::string kFake100 = COCO_FAKE100_DIR;

inline std::string fake100_results(IouType type) {
  return kFake100 + "/instances_val2014_fake" + std::string(iou_type_name(type)) + "100_results.json";
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// An evaluation that keeps its inputs in place (the evaluator refers to them).
struct Evaluation {
  CocoGroundTruth gt;
  CocoDetections dt;
  std::unique_ptr<CocoEvaluator> evaluator;
  CocoSummary summary;

  Evaluation(CocoGroundTruth g, const nlohmann::json& results, IouType type)
      : gt(std::move(g)), dt(CocoDetections::parse(gt, results.dump(), "dt")) {
    evaluator = std::make_unique<CocoEvaluator>(gt, dt, type, 2);
    evaluator->evaluate();
    evaluator->accumulate();
    summary = evaluator->summarize();
  }
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;
};

inline const Evaluation& fake100(IouType type) {
  static std::map<IouType, std::unique_ptr<Evaluation>> cache;
  auto& e = cache[type];
  if (!e) {
    e = std::make_unique<Evaluation>(CocoGroundTruth::load(kFake100 + "/instances_val2014_100.json"),
                                     read_json(fake100_results(type)), type);
  }
  return *e;
}

// Boxes on 100x100 images: ground truths "image category x y w h [crowd]"
// and detections "image category x y w h score"; categories 1..categories
// named c1, c2, ...
struct BoxScenario {
  int categories = 1;
  std::vector<std::vector<double>> gts, dts;

  std::string gt_json() const {
    int max_image = 1;
    for (const auto& g : gts) max_image = std::max(max_image, int(g[0]));
    for (const auto& d : dts) max_image = std::max(max_image, int(d[0]));
    std::string images, cats, anns;
    for (int i = 1; i <= max_image; ++i) {
      images += fmt::format("{}{{\"id\": {}, \"height\": 100, \"width\": 100}}", i > 1 ? "," : "", i);
    }
    for (int c = 1; c <= categories; ++c)
      cats += fmt::format("{}{{\"id\": {}, \"name\": \"c{}\"}}", c > 1 ? "," : "", c, c);
    for (size_t n = 0; n < gts.size(); ++n) {
      const auto& g = gts[n];
      anns += fmt::format(
          "{}{{\"id\": {}, \"image_id\": {}, \"category_id\": {}, \"bbox\": [{}, {}, {}, {}], \"area\": {}, "
          "\"iscrowd\": {}}}",
          n ? "," : "", n + 1, int(g[0]), int(g[1]), g[2], g[3], g[4], g[5], g[4] * g[5], g.size() > 6 ? int(g[6]) : 0);
    }
    return fmt::format(R"({{"images": [{}], "categories": [{}], "annotations": [{}]}})", images, cats, anns);
  }
  std::string dt_json() const {
    std::string results;
    for (size_t n = 0; n < dts.size(); ++n) {
      const auto& d = dts[n];
      results += fmt::format("{}{{\"image_id\": {}, \"category_id\": {}, \"bbox\": [{}, {}, {}, {}], \"score\": {}}}",
                             n ? "," : "", int(d[0]), int(d[1]), d[2], d[3], d[4], d[5], d[6]);
    }
    return "[" + results + "]";
  }
  std::unique_ptr<Evaluation> evaluate() const {
    return std::make_unique<Evaluation>(CocoGroundTruth::parse(gt_json(), "gt"), nlohmann::json::parse(dt_json()),
                                        IouType::kBbox);
  }
};

}  // namespace dtrain::vision::testing
