#include "vision/report/precision_recall_curves.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/numpy_arithmetic.h"

namespace dtrain::vision {
namespace {

double mean_or_minus_one(const std::vector<double>& measured) { return measured.empty() ? -1.0 : numpy_mean(measured); }

// Enough to draw with, and a third of the size of full doubles.
double rounded(double v) { return std::round(v * 1e6) / 1e6; }

nlohmann::ordered_json rounded_array(const std::vector<double>& values, size_t begin, size_t count) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = begin; i < begin + count; ++i) out.push_back(rounded(values[i]));
  return out;
}

}  // namespace

size_t PrecisionRecallCurves::area_index(const std::string& label) const {
  for (size_t a = 0; a < areas.size(); ++a) {
    if (areas[a].label == label) return a;
  }
  throw CocoError("no area range '" + label + "'");
}

PrecisionRecallCurves precision_recall_curves(const CocoEvaluator& evaluator) {
  const EvaluationParams& params = evaluator.params();
  const AccumulatedEvaluation& e = evaluator.accumulated();
  if (params.max_detections.size() < 3) throw CocoError("precision/recall curves need three detection limits");
  const size_t m = 2;
  PrecisionRecallCurves c;
  c.iou_type = params.iou_type;
  c.max_detections = params.max_detections[m];
  c.iou_thresholds = params.iou_thresholds;
  c.recall_thresholds = params.recall_thresholds;
  c.areas = params.area_ranges;
  c.categories = evaluator.categories();
  const size_t T = e.T, R = e.R, K = e.K, A = e.A;
  const size_t all = c.area_index("all");

  std::vector<double> measured;
  c.precision.assign(T * A * R, -1.0);
  c.ap.assign(T * A, -1.0);
  for (size_t t = 0; t < T; ++t) {
    for (size_t a = 0; a < A; ++a) {
      std::vector<double> over_recall_and_categories;
      for (size_t r = 0; r < R; ++r) {
        measured.clear();
        for (size_t k = 0; k < K; ++k) {
          const double v = e.precision_at(t, r, k, a, m);
          if (v > -1) measured.push_back(v);
        }
        c.precision[(t * A + a) * R + r] = mean_or_minus_one(measured);
        over_recall_and_categories.insert(over_recall_and_categories.end(), measured.begin(), measured.end());
      }
      // The order summarize averages in: r, then k.
      c.ap[t * A + a] = mean_or_minus_one(over_recall_and_categories);
    }
  }

  c.category_precision.assign(K * T * R, -1.0);
  c.category_scores.assign(K * T * R, -1.0);
  for (size_t k = 0; k < K; ++k) {
    for (size_t t = 0; t < T; ++t) {
      for (size_t r = 0; r < R; ++r) {
        c.category_precision[(k * T + t) * R + r] = e.precision_at(t, r, k, all, m);
        c.category_scores[(k * T + t) * R + r] = e.score_at(t, r, k, all, m);
      }
    }
  }
  c.recall.assign(T * K * A, -1.0);
  for (size_t t = 0; t < T; ++t) {
    for (size_t k = 0; k < K; ++k) {
      for (size_t a = 0; a < A; ++a) c.recall[(t * K + k) * A + a] = e.recall_at(t, k, a, m);
    }
  }
  return c;
}

nlohmann::ordered_json to_json(const PrecisionRecallCurves& c) {
  const size_t T = c.T(), R = c.R(), A = c.A(), K = c.K();
  nlohmann::ordered_json j;
  j["iou_type"] = std::string(iou_type_name(c.iou_type));
  j["max_detections"] = c.max_detections;
  j["iou_thresholds"] = c.iou_thresholds;
  j["recall_thresholds"] = c.recall_thresholds;
  auto& areas = j["areas"] = nlohmann::ordered_json::array();
  for (const AreaRange& a : c.areas) areas.push_back({{"label", a.label}, {"min", a.min}, {"max", a.max}});
  auto& categories = j["categories"] = nlohmann::ordered_json::array();
  for (const CocoCategory& k : c.categories) categories.push_back({{"id", k.id}, {"name", k.name}});

  auto& precision = j["precision"] = nlohmann::ordered_json::array();
  auto& ap = j["ap"] = nlohmann::ordered_json::array();
  for (size_t t = 0; t < T; ++t) {
    nlohmann::ordered_json by_area = nlohmann::ordered_json::array();
    for (size_t a = 0; a < A; ++a) by_area.push_back(rounded_array(c.precision, (t * A + a) * R, R));
    precision.push_back(std::move(by_area));
    ap.push_back(rounded_array(c.ap, t * A, A));
  }
  for (const char* name : {"category_precision", "category_scores"}) {
    const auto& values = std::string(name) == "category_precision" ? c.category_precision : c.category_scores;
    auto& out = j[name] = nlohmann::ordered_json::array();
    for (size_t k = 0; k < K; ++k) {
      nlohmann::ordered_json by_threshold = nlohmann::ordered_json::array();
      for (size_t t = 0; t < T; ++t) by_threshold.push_back(rounded_array(values, (k * T + t) * R, R));
      out.push_back(std::move(by_threshold));
    }
  }
  auto& recall = j["recall"] = nlohmann::ordered_json::array();
  for (size_t t = 0; t < T; ++t) {
    nlohmann::ordered_json by_category = nlohmann::ordered_json::array();
    for (size_t k = 0; k < K; ++k) by_category.push_back(rounded_array(c.recall, (t * K + k) * A, A));
    recall.push_back(std::move(by_category));
  }
  return j;
}

}  // namespace dtrain::vision
