#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vision/coco/coco_annotation.h"
#include "vision/evaluation/coco_ground_truth.h"

namespace simdjson {
struct padded_string;
}  // namespace simdjson

namespace dtrain::vision {

// A results file read and parsed but not yet checked against a ground truth,
// so that it can be read while the ground truth loads (`dtrain coco-eval`
// does). A file that cannot be read or is not JSON is a CocoError here.
class ParsedCocoResults {
 public:
  static ParsedCocoResults load(const std::string& path);
  static ParsedCocoResults parse(std::string_view json_text, const std::string& source = "<json>");
  ParsedCocoResults(ParsedCocoResults&&) noexcept;
  ParsedCocoResults& operator=(ParsedCocoResults&&) noexcept;
  ~ParsedCocoResults();

 private:
  friend class CocoDetections;
  struct Document;  // the text and simdjson's DOM of it
  ParsedCocoResults(simdjson::padded_string text, const std::string& source);
  std::unique_ptr<Document> document_;
};

// Detection results in COCO's results format, loaded with the semantics of
// pycocotools' COCO.loadRes: a JSON list of {image_id, category_id, score,
// bbox and/or segmentation}. The first entry decides how all are read:
//  - it has a non-empty bbox: area = w*h; a missing segmentation becomes the
//    box's polygon;
//  - otherwise it has a segmentation (an RLE): area = the mask's pixel count
//    and a missing (or empty) bbox is the mask's tight box; the mask is kept
//    decoded.
// Detections get ids 1..N in file order and iscrowd = 0. An image_id that is
// not in the ground truth is a CocoError naming the entry (checked for every
// entry before anything else, as loadRes asserts).
//
// The text is parsed with simdjson; the entries are then read on `threads`
// threads (0: one per core), RLE counts decoded straight from the parsed
// text. The detections, and the error reported for bad input (the first bad
// entry), do not depend on the thread count.
class CocoDetections {
 public:
  static CocoDetections load(const CocoGroundTruth& gt, const std::string& path, int threads = 0);
  static CocoDetections parse(const CocoGroundTruth& gt, std::string_view json_text,
                              const std::string& source = "<json>", int threads = 0);
  static CocoDetections read(const CocoGroundTruth& gt, const ParsedCocoResults& results, int threads = 0);

  const std::vector<CocoAnnotation>& detections() const { return detections_; }
  // Whether `detection` (one of detections()) is a mask result whose bbox
  // was computed from its mask (rle_to_bbox), so that mask evaluation need
  // not compute it again.
  bool bbox_is_mask_box(const CocoAnnotation& detection) const;

 private:
  std::vector<CocoAnnotation> detections_;
  std::vector<uint8_t> bbox_is_mask_box_;  // per detection; empty for box results
};

}  // namespace dtrain::vision
