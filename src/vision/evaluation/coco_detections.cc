#include "vision/evaluation/coco_detections.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"
#include "vision/coco/segmentation_mask.h"
#include "vision/evaluation/entry_chunks.h"
#include "vision/evaluation/json_dom.h"

namespace dtrain::vision {
namespace {

constexpr const char* kResultsList = "results";

// A box result (loadRes' bbox branch): area = w*h; without a segmentation
// the box becomes a polygon.
void read_box_result(const json_dom::Entry& entry, CocoAnnotation& det) {
  det.bbox = entry.box("bbox");
  const BoundingBox& b = det.bbox;
  if (entry.has("segmentation")) {
    det.segmentation = entry.segmentation("segmentation");
  } else {
    const double x1 = b.x, x2 = b.x + b.width, y1 = b.y, y2 = b.y + b.height;
    det.segmentation = Polygons{{x1, y1, x1, y2, x2, y2, x2, y1}};
  }
  det.area = b.width * b.height;
}

// A mask result (loadRes' segmentation branch): area and, without a bbox,
// the box from the mask. The decoded runs are kept: the evaluator needs them.
// Returns whether the bbox is the mask's.
bool read_mask_result(const json_dom::Entry& entry, const CocoImage& image, CocoAnnotation& det) {
  // Reading the field reports its own faults with the entry's location ...
  const std::optional<json_dom::RleText> rle = entry.compressed_rle("segmentation");
  Segmentation other;
  if (!rle) other = entry.segmentation("segmentation");
  // ... decoding it does not.
  RunLengthMask mask;
  try {
    mask = rle ? rle_from_counts_string(rle->counts, rle->height, rle->width)
               : segmentation_mask(other, image.height, image.width);
  } catch (const CocoError& e) {
    entry.fail(fmt::format("field 'segmentation': {}", e.what()));
  }
  det.area = static_cast<double>(rle_area(mask));
  // loadRes keeps an empty bbox as it is; it is never used for masks, so it
  // is read like a missing one.
  const std::optional<json_dom::dom::element> bbox = entry.find("bbox");
  const bool given = bbox && !json_dom::is_empty_array(*bbox);
  det.bbox = given ? entry.box("bbox") : rle_to_bbox(mask);
  det.segmentation = std::move(mask);
  return !given;
}

struct ReadResults {
  std::vector<CocoAnnotation> detections;
  std::vector<uint8_t> bbox_is_mask_box;
};

ReadResults read_detections(const CocoGroundTruth& gt, json_dom::dom::element root, const std::string& source,
                            int threads) {
  json_dom::dom::array list;
  if (root.get_array().get(list) != simdjson::SUCCESS) {
    throw CocoError(
        fmt::format("{}: results must be a JSON list of detections, got {}", source, json_dom::type_name(root)));
  }
  std::vector<json_dom::dom::element> values;
  values.reserve(list.size());
  for (const json_dom::dom::element value : list) values.push_back(value);
  const size_t n = values.size();
  ReadResults out;
  if (n == 0) return out;

  // Like loadRes, every image must be known before anything else is read.
  for_each_entry(n, threads, [&](size_t i) {
    const json_dom::Entry entry(values[i], source, kResultsList, i);
    const int64_t image_id = entry.integer("image_id");
    if (gt.find_image(image_id) == nullptr) {
      entry.fail(fmt::format("image_id {} is not an image of the ground truth {}", image_id, gt.source()));
    }
  });

  const json_dom::Entry first(values[0], source, kResultsList, 0);
  const std::optional<json_dom::dom::element> first_bbox = first.find("bbox");
  const bool boxes = first_bbox && !json_dom::is_empty_array(*first_bbox);
  if (!boxes && !first.has("segmentation")) first.fail("needs a 'bbox' or a 'segmentation'");

  out.detections.resize(n);
  if (!boxes) out.bbox_is_mask_box.resize(n);
  for_each_entry(n, threads, [&](size_t i) {
    const json_dom::Entry entry(values[i], source, kResultsList, i);
    CocoAnnotation& det = out.detections[i];
    det.id = static_cast<int64_t>(i) + 1;
    det.image_id = entry.integer("image_id");
    det.category_id = entry.integer("category_id");
    det.score = entry.number("score");
    det.iscrowd = false;
    if (boxes) {
      read_box_result(entry, det);
    } else {
      out.bbox_is_mask_box[i] = read_mask_result(entry, *gt.find_image(det.image_id), det);
    }
  });
  return out;
}

}  // namespace

struct ParsedCocoResults::Document {
  simdjson::padded_string text;
  json_dom::dom::parser parser;
  json_dom::dom::element root;
  std::string source;
};

ParsedCocoResults::ParsedCocoResults(simdjson::padded_string text, const std::string& source)
    : document_(std::make_unique<Document>()) {
  document_->text = std::move(text);
  document_->source = source;
  document_->root = json_dom::parse(document_->parser, document_->text, source);
}

ParsedCocoResults::ParsedCocoResults(ParsedCocoResults&&) noexcept = default;
ParsedCocoResults& ParsedCocoResults::operator=(ParsedCocoResults&&) noexcept = default;
ParsedCocoResults::~ParsedCocoResults() = default;

ParsedCocoResults ParsedCocoResults::load(const std::string& path) {
  return ParsedCocoResults(json_dom::read_file(path), path);
}

ParsedCocoResults ParsedCocoResults::parse(std::string_view json_text, const std::string& source) {
  return ParsedCocoResults(simdjson::padded_string(json_text), source);
}

CocoDetections CocoDetections::load(const CocoGroundTruth& gt, const std::string& path, int threads) {
  return read(gt, ParsedCocoResults::load(path), threads);
}

CocoDetections CocoDetections::parse(const CocoGroundTruth& gt, std::string_view json_text, const std::string& source,
                                     int threads) {
  return read(gt, ParsedCocoResults::parse(json_text, source), threads);
}

CocoDetections CocoDetections::read(const CocoGroundTruth& gt, const ParsedCocoResults& results, int threads) {
  ReadResults read = read_detections(gt, results.document_->root, results.document_->source, threads);
  CocoDetections out;
  out.detections_ = std::move(read.detections);
  out.bbox_is_mask_box_ = std::move(read.bbox_is_mask_box);
  return out;
}

bool CocoDetections::bbox_is_mask_box(const CocoAnnotation& detection) const {
  const CocoAnnotation* first = detections_.data();
  const std::less<const CocoAnnotation*> before;
  if (bbox_is_mask_box_.empty() || before(&detection, first) || !before(&detection, first + detections_.size())) {
    return false;
  }
  return bbox_is_mask_box_[static_cast<size_t>(&detection - first)] != 0;
}

}  // namespace dtrain::vision
