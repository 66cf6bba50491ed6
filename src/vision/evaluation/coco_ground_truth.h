#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vision/coco/coco_annotation.h"

namespace simdjson {
struct padded_string;
}  // namespace simdjson

namespace dtrain::vision {

// A COCO-format ground truth (instances_*.json): images, categories and
// annotations, in file order. Required fields: images[].{id, height, width},
// categories[].id, annotations[].{id, image_id, category_id, area, iscrowd,
// bbox}; `segmentation` may be polygons, a compressed RLE or an uncompressed
// RLE and is only needed for mask evaluation. Category ids need not be
// contiguous. Errors are CocoError naming the file, the list and the index.
// The text is parsed with simdjson; the annotations are read on `threads`
// threads (0: one per core), with the same result and the same error (the
// first bad entry) for any thread count.
class CocoGroundTruth {
 public:
  static CocoGroundTruth load(const std::string& path, int threads = 0);
  static CocoGroundTruth parse(std::string_view json_text, const std::string& source = "<json>", int threads = 0);

  const std::vector<CocoImage>& images() const { return images_; }
  const std::vector<CocoCategory>& categories() const { return categories_; }
  const std::vector<CocoAnnotation>& annotations() const { return annotations_; }

  // nullptr when the id is not in `images`. With duplicate ids the last wins.
  const CocoImage* find_image(int64_t id) const;
  const std::string& source() const { return source_; }

 private:
  static CocoGroundTruth read(const simdjson::padded_string& text, const std::string& source, int threads);

  std::string source_;
  std::vector<CocoImage> images_;
  std::vector<CocoCategory> categories_;
  std::vector<CocoAnnotation> annotations_;
  std::unordered_map<int64_t, size_t> image_index_;
};

}  // namespace dtrain::vision
