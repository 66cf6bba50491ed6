#include "vision/report/error_breakdown.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/coco/segmentation_mask.h"
#include "vision/evaluation/iou_matrix.h"

namespace dtrain::vision {
namespace {

constexpr double kBackgroundIou = 0.1;

size_t index_of_threshold(const EvaluationParams& params, double threshold) {
  for (size_t t = 0; t < params.iou_thresholds.size(); ++t) {
    if (params.iou_thresholds[t] == threshold) return t;
  }
  throw CocoError("the error breakdown needs the IoU threshold 0.5");
}

size_t index_of_area(const EvaluationParams& params, const std::string& label) {
  for (size_t a = 0; a < params.area_ranges.size(); ++a) {
    if (params.area_ranges[a].label == label) return a;
  }
  throw CocoError("the error breakdown needs the area range '" + label + "'");
}

// Masks for one image: borrowed when the annotation holds decoded runs.
class Masks {
 public:
  const RunLengthMask* get(const CocoAnnotation& ann, const CocoImage& image) {
    if (const auto* mask = std::get_if<RunLengthMask>(&ann.segmentation)) return mask;
    owned_.push_back(segmentation_mask(ann.segmentation, image.height, image.width));
    return &owned_.back();
  }

 private:
  std::deque<RunLengthMask> owned_;  // stable addresses
};

void add(ErrorCounts& to, const ErrorCounts& from) {
  to.detections += from.detections;
  to.true_positives += from.true_positives;
  to.false_positives += from.false_positives;
  to.localisation += from.localisation;
  to.classification += from.classification;
  to.duplicate += from.duplicate;
  to.background += from.background;
  to.localisation_and_classification += from.localisation_and_classification;
  to.ground_truths += from.ground_truths;
  to.missed += from.missed;
}

nlohmann::ordered_json counts_json(const ErrorCounts& c) {
  return {
      {"detections", c.detections},           {"true_positives", c.true_positives},
      {"false_positives", c.false_positives}, {"localisation", c.localisation},
      {"classification", c.classification},   {"duplicate", c.duplicate},
      {"background", c.background},           {"localisation_and_classification", c.localisation_and_classification},
      {"ground_truths", c.ground_truths},     {"missed", c.missed}};
}

}  // namespace

ErrorBreakdown error_breakdown(const CocoEvaluator& evaluator, const CocoGroundTruth& gt, const CocoDetections& dt) {
  const EvaluationParams& params = evaluator.params();
  const size_t t = index_of_threshold(params, 0.5);
  const size_t a = index_of_area(params, "all");
  const size_t T = params.iou_thresholds.size();
  const auto& categories = evaluator.categories();
  const auto& image_ids = evaluator.image_ids();
  const auto& evaluations = evaluator.image_evaluations();
  const size_t K = categories.size(), I = image_ids.size();
  if (evaluations.size() != K * I) throw CocoError("the error breakdown needs evaluate() first");

  std::unordered_map<int64_t, size_t> image_index, category_index;
  for (size_t i = 0; i < I; ++i) image_index[image_ids[i]] = i;
  for (size_t k = 0; k < K; ++k) category_index[categories[k].id] = k;
  // Per image: its ground truths that are not crowds (any evaluated class),
  // and per cell (k * I + i) its detections in file order, as the evaluator
  // buckets them.
  std::vector<std::vector<const CocoAnnotation*>> gts_of_image(I);
  for (const CocoAnnotation& g : gt.annotations()) {
    const auto i = image_index.find(g.image_id);
    if (g.iscrowd || i == image_index.end() || !category_index.count(g.category_id)) continue;
    gts_of_image[i->second].push_back(&g);
  }
  std::vector<std::vector<const CocoAnnotation*>> dts_of_cell(K * I);
  for (const CocoAnnotation& d : dt.detections()) {
    const auto i = image_index.find(d.image_id);
    const auto k = category_index.find(d.category_id);
    if (i == image_index.end() || k == category_index.end()) continue;
    dts_of_cell[k->second * I + i->second].push_back(&d);
  }

  ErrorBreakdown out;
  out.iou_type = params.iou_type;
  out.iou_threshold = params.iou_thresholds[t];
  out.max_detections = params.max_detections.back();
  out.categories.resize(K);
  for (size_t k = 0; k < K; ++k) out.categories[k] = {categories[k].id, categories[k].name, {}};

  std::vector<const CocoAnnotation*> false_positives;
  std::vector<size_t> false_positive_category;
  for (size_t i = 0; i < I; ++i) {
    false_positives.clear();
    false_positive_category.clear();
    for (size_t k = 0; k < K; ++k) {
      const ImageCategoryEvaluation& e = evaluations[k * I + i];
      if (!e.present) continue;
      ErrorCounts& counts = out.categories[k].counts;
      // The evaluator's order: best score first, ties in file order, truncated.
      std::vector<const CocoAnnotation*> dts = dts_of_cell[k * I + i];
      std::stable_sort(dts.begin(), dts.end(),
                       [](const CocoAnnotation* x, const CocoAnnotation* y) { return x->score > y->score; });
      if (dts.size() > e.scores.size()) dts.resize(e.scores.size());
      counts.ground_truths += e.counted_gt[a];
      uint64_t true_positives = 0;
      for (size_t d = 0; d < dts.size(); ++d) {
        const DetectionOutcome o = e.outcome(a, t, d, T);
        if (o == DetectionOutcome::kIgnored) continue;
        ++counts.detections;
        if (o == DetectionOutcome::kTruePositive) {
          ++true_positives;
        } else {
          false_positives.push_back(dts[d]);
          false_positive_category.push_back(k);
        }
      }
      counts.true_positives += true_positives;
      counts.missed += e.counted_gt[a] - true_positives;
    }
    if (false_positives.empty()) continue;

    const std::vector<const CocoAnnotation*>& gts = gts_of_image[i];
    const std::vector<uint8_t> not_crowd(gts.size(), 0);
    std::vector<double> ious;
    if (!gts.empty()) {
      if (params.iou_type == IouType::kBbox) {
        std::vector<BoundingBox> dt_boxes, gt_boxes;
        for (const CocoAnnotation* d : false_positives) dt_boxes.push_back(d->bbox);
        for (const CocoAnnotation* g : gts) gt_boxes.push_back(g->bbox);
        ious = box_iou_matrix(dt_boxes, gt_boxes, not_crowd);
      } else {
        const CocoImage& image = *gt.find_image(image_ids[i]);
        Masks masks;
        std::vector<const RunLengthMask*> dt_masks, gt_masks;
        try {
          for (const CocoAnnotation* g : gts) gt_masks.push_back(masks.get(*g, image));
          for (const CocoAnnotation* d : false_positives) dt_masks.push_back(masks.get(*d, image));
        } catch (const CocoError& e) {
          throw CocoError(fmt::format("error breakdown, image {}: {}", image.id, e.what()));
        }
        ious = mask_iou_matrix(dt_masks, gt_masks, not_crowd);
      }
    }
    const size_t G = gts.size();
    for (size_t d = 0; d < false_positives.size(); ++d) {
      const int64_t category = false_positives[d]->category_id;
      double same_class = 0, other_class = 0;
      for (size_t g = 0; g < G; ++g) {
        double& best = gts[g]->category_id == category ? same_class : other_class;
        best = std::max(best, ious[d * G + g]);
      }
      ErrorCounts& counts = out.categories[false_positive_category[d]].counts;
      ++counts.false_positives;
      if (same_class >= kBackgroundIou && same_class < out.iou_threshold)
        ++counts.localisation;
      else if (other_class >= out.iou_threshold)
        ++counts.classification;
      else if (same_class >= out.iou_threshold)
        ++counts.duplicate;
      else if (std::max(same_class, other_class) < kBackgroundIou)
        ++counts.background;
      else
        ++counts.localisation_and_classification;
    }
  }
  for (const CategoryErrors& c : out.categories) add(out.total, c.counts);
  return out;
}

nlohmann::ordered_json to_json(const ErrorBreakdown& errors) {
  nlohmann::ordered_json j;
  j["iou_type"] = std::string(iou_type_name(errors.iou_type));
  j["iou_threshold"] = errors.iou_threshold;
  j["area"] = "all";
  j["max_detections"] = errors.max_detections;
  j["total"] = counts_json(errors.total);
  auto& categories = j["categories"] = nlohmann::ordered_json::array();
  for (const CategoryErrors& c : errors.categories) {
    nlohmann::ordered_json entry = {{"id", c.id}, {"name", c.name}};
    entry.update(counts_json(c.counts));
    categories.push_back(std::move(entry));
  }
  return j;
}

std::string error_breakdown_markdown(const ErrorBreakdown& errors) {
  const ErrorCounts& c = errors.total;
  return fmt::format(
      "Errors at IoU {:0.2f} (TIDE-style, area all, `{}_errors.json` has them per category): "
      "{} detections, {} true positives, {} false positives: {} localisation, {} classification, "
      "{} duplicate, {} background, {} localisation and classification; {} of {} ground truths missed.\n",
      errors.iou_threshold, iou_type_name(errors.iou_type), c.detections, c.true_positives, c.false_positives,
      c.localisation, c.classification, c.duplicate, c.background, c.localisation_and_classification, c.missed,
      c.ground_truths);
}

}  // namespace dtrain::vision
