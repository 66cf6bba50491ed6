#include "vision/evaluation/coco_evaluator.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/iou_matrix.h"
#include "concurrency/parallel_for.h"
#include "vision/coco/segmentation_mask.h"

namespace dtrain::vision {
namespace {

// Cells handed to a thread at a time: enough to amortize scheduling, few
// enough that one large category does not leave threads idle.
constexpr size_t kCellsPerTask = 64;

// Fills CSR arrays: the annotations of each cell in file order.
void bucket_by_cell(const std::vector<std::pair<uint32_t, const CocoAnnotation*>>& placed, size_t cells,
                    std::vector<uint32_t>& offsets, std::vector<const CocoAnnotation*>& members) {
  offsets.assign(cells + 1, 0);
  for (const auto& [cell, ann] : placed) ++offsets[cell + 1];
  for (size_t c = 0; c < cells; ++c) offsets[c + 1] += offsets[c];
  members.resize(placed.size());
  std::vector<uint32_t> cursor(offsets.begin(), offsets.end() - 1);
  for (const auto& [cell, ann] : placed) members[cursor[cell]++] = ann;
}

// A mask for the evaluation: borrowed when the annotation already holds
// decoded runs, computed otherwise.
class MaskSource {
 public:
  const RunLengthMask* get(const CocoAnnotation& ann, const CocoImage& image) {
    if (const auto* mask = std::get_if<RunLengthMask>(&ann.segmentation)) return mask;
    owned_.push_back(segmentation_mask(ann.segmentation, image.height, image.width));
    return &owned_.back();
  }
  void reserve(size_t n) { owned_.reserve(n); }  // keeps returned pointers stable

 private:
  std::vector<RunLengthMask> owned_;
};

}  // namespace

CocoEvaluator::CocoEvaluator(const CocoGroundTruth& gt, const CocoDetections& dt, IouType iou_type, int threads)
    : CocoEvaluator(gt, dt, EvaluationParams::coco_defaults(iou_type), threads) {}

CocoEvaluator::CocoEvaluator(const CocoGroundTruth& gt, const CocoDetections& dt, EvaluationParams params, int threads)
    : gt_(gt), dt_(dt), params_(std::move(params)), threads_(concurrency::resolve_thread_count(threads)) {
  std::sort(params_.max_detections.begin(), params_.max_detections.end());
  if (params_.max_detections.empty()) throw CocoError("evaluation needs at least one detection limit");
  index_annotations();
}

void CocoEvaluator::index_annotations() {
  // Images and categories: unique ids in ascending order (np.unique / sorted).
  std::map<int64_t, const CocoImage*> images;
  for (const auto& image : gt_.images()) images[image.id] = gt_.find_image(image.id);
  for (const auto& [id, image] : images) {
    image_ids_.push_back(id);
    images_.push_back(image);
  }
  std::map<int64_t, const CocoCategory*> categories;
  for (const auto& category : gt_.categories()) categories[category.id] = &category;
  for (const auto& [id, category] : categories) categories_.push_back(*category);

  std::unordered_map<int64_t, uint32_t> image_index, category_index;
  image_index.reserve(image_ids_.size());
  for (size_t i = 0; i < image_ids_.size(); ++i) image_index[image_ids_[i]] = static_cast<uint32_t>(i);
  for (size_t k = 0; k < categories_.size(); ++k) category_index[categories_[k].id] = static_cast<uint32_t>(k);

  const size_t I = image_ids_.size();
  const size_t cells = categories_.size() * I;
  if (cells >= (size_t{1} << 32)) throw CocoError("too many images x categories to evaluate");
  auto place = [&](const std::vector<CocoAnnotation>& anns) {
    std::vector<std::pair<uint32_t, const CocoAnnotation*>> placed;
    placed.reserve(anns.size());
    for (const auto& ann : anns) {
      const auto i = image_index.find(ann.image_id);
      const auto k = category_index.find(ann.category_id);
      if (i == image_index.end() || k == category_index.end()) continue;  // not evaluated
      placed.emplace_back(static_cast<uint32_t>(k->second * I + i->second), &ann);
    }
    return placed;
  };
  bucket_by_cell(place(gt_.annotations()), cells, gt_offsets_, gt_by_cell_);
  bucket_by_cell(place(dt_.detections()), cells, dt_offsets_, dt_by_cell_);
}

void CocoEvaluator::evaluate_cell(size_t cell) {
  const size_t I = image_ids_.size();
  const CocoImage& image = *images_[cell % I];
  std::span<const CocoAnnotation* const> gts(gt_by_cell_.data() + gt_offsets_[cell],
                                             gt_offsets_[cell + 1] - gt_offsets_[cell]);
  std::vector<const CocoAnnotation*> dts(dt_by_cell_.begin() + dt_offsets_[cell],
                                         dt_by_cell_.begin() + dt_offsets_[cell + 1]);
  if (gts.empty() && dts.empty()) return;
  // Best score first, ties in file order (np.argsort(-score, kind='mergesort')).
  std::stable_sort(dts.begin(), dts.end(),
                   [](const CocoAnnotation* a, const CocoAnnotation* b) { return a->score > b->score; });
  const auto max_det = static_cast<size_t>(params_.max_detections.back());
  if (dts.size() > max_det) dts.resize(max_det);

  std::vector<uint8_t> crowd(gts.size());
  for (size_t g = 0; g < gts.size(); ++g) crowd[g] = gts[g]->iscrowd;
  std::vector<double> ious;
  if (!gts.empty() && !dts.empty()) {
    if (params_.iou_type == IouType::kBbox) {
      std::vector<BoundingBox> dt_boxes(dts.size()), gt_boxes(gts.size());
      for (size_t d = 0; d < dts.size(); ++d) dt_boxes[d] = dts[d]->bbox;
      for (size_t g = 0; g < gts.size(); ++g) gt_boxes[g] = gts[g]->bbox;
      ious = box_iou_matrix(dt_boxes, gt_boxes, crowd);
    } else {
      MaskSource source;
      source.reserve(gts.size() + dts.size());
      std::vector<const RunLengthMask*> dt_masks(dts.size()), gt_masks(gts.size());
      const CocoAnnotation* current = nullptr;
      bool is_gt = true;
      try {
        for (size_t g = 0; g < gts.size(); ++g) {
          current = gts[g];
          gt_masks[g] = source.get(*gts[g], image);
        }
        is_gt = false;
        for (size_t d = 0; d < dts.size(); ++d) {
          current = dts[d];
          dt_masks[d] = source.get(*dts[d], image);
        }
      } catch (const CocoError& e) {
        throw CocoError(fmt::format("{}: {} with id {} (image {}): {}", is_gt ? gt_.source() : std::string("results"),
                                    is_gt ? "annotation" : "detection", current->id, current->image_id, e.what()));
      }
      // rleIou's box test needs every mask's box; a mask result's bbox is
      // that box unless the result gave its own.
      std::vector<BoundingBox> dt_boxes(dts.size()), gt_boxes(gts.size());
      for (size_t d = 0; d < dts.size(); ++d) {
        dt_boxes[d] = dt_.bbox_is_mask_box(*dts[d]) ? dts[d]->bbox : rle_to_bbox(*dt_masks[d]);
      }
      for (size_t g = 0; g < gts.size(); ++g) gt_boxes[g] = rle_to_bbox(*gt_masks[g]);
      ious = mask_iou_matrix(dt_masks, dt_boxes, gt_masks, gt_boxes, crowd);
    }
  }
  evaluations_[cell] = match_detections(gts, dts, ious, params_);
}

void CocoEvaluator::evaluate() {
  const size_t cells = categories_.size() * image_ids_.size();
  evaluations_.assign(cells, ImageCategoryEvaluation{});
  const size_t tasks = (cells + kCellsPerTask - 1) / kCellsPerTask;
  concurrency::parallel_for(tasks, threads_, [&](size_t task) {
    const size_t end = std::min(cells, (task + 1) * kCellsPerTask);
    for (size_t cell = task * kCellsPerTask; cell < end; ++cell) evaluate_cell(cell);
  });
  evaluated_ = true;
  accumulated_done_ = false;
}

void CocoEvaluator::accumulate() {
  if (!evaluated_) throw CocoError("accumulate() needs evaluate() first");
  const size_t K = categories_.size(), I = image_ids_.size();
  accumulated_ = AccumulatedEvaluation::empty(params_, K);
  concurrency::parallel_for(K, threads_, [&](size_t k) {
    accumulate_category(k, std::span(evaluations_).subspan(k * I, I), params_, accumulated_);
  });
  accumulated_done_ = true;
}

CocoSummary CocoEvaluator::summarize() const {
  if (!accumulated_done_) throw CocoError("summarize() needs accumulate() first");
  return dtrain::vision::summarize(accumulated_, params_, categories_);
}

}  // namespace dtrain::vision
