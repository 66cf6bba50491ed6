#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vision/data/bad_input_policy.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::vision {

// One image of a COCO instances file with where its annotations are.
struct DatasetImage {
  int64_t id = 0;
  uint32_t height = 0;
  uint32_t width = 0;
  std::string file_name;
  uint32_t first_annotation = 0;  // into CocoDataset::annotations()
  uint32_t annotation_count = 0;
  bool unusable = false;  // an annotation of it was bad and skipped (kSkip policy)
};

struct CocoDatasetOptions {
  BadInputPolicy policy = BadInputPolicy::kError;
  WarningSink warn;
};

// A COCO instances file (instances_*.json) indexed for training: images in
// file order, each with its annotations (in file order), categories sorted by
// id and mapped to contiguous labels 1..K (0 is the background), as
// Detectron2's and torchvision's trainers see them. Reading uses simdjson:
// train2017's 448 MB load in a few seconds rather than tens.
//
// Required: images[].{id, width, height, file_name}, categories[].id,
// annotations[].{id, image_id, category_id, bbox}. Optional: iscrowd
// (default 0), area (default bbox w*h), segmentation (polygons, compressed or
// uncompressed RLE; without one the instance's mask is its box). Errors are
// CocoError messages naming the file and the entry, e.g.
//   instances.json: annotations[17] (id 42): polygon has 2 points, needs at least 3
// Under BadInputPolicy::kSkip a bad annotation is a warning instead: one
// pointing at an unknown image is dropped, any other makes its image unusable
// (left out of training_indices()).
class CocoDataset {
 public:
  static CocoDataset load(const std::string& json_path, const std::string& image_dir,
                          const CocoDatasetOptions& options = {});
  static CocoDataset parse(std::string_view json_text, const std::string& source, const std::string& image_dir,
                           const CocoDatasetOptions& options = {});

  const std::string& source() const { return source_; }
  const std::string& image_dir() const { return image_dir_; }
  const std::vector<DatasetImage>& images() const { return images_; }
  // Grouped by image (in images() order), file order within an image.
  const std::vector<CocoAnnotation>& annotations() const { return annotations_; }
  // Sorted by id; label of categories()[i] is i + 1.
  const std::vector<CocoCategory>& categories() const { return categories_; }

  std::span<const CocoAnnotation> annotations_of(const DatasetImage& image) const;
  std::string image_path(const DatasetImage& image) const;
  const DatasetImage* find_image(int64_t id) const;

  // Contiguous labels: 1..K for the categories in id order, 0 for an id that
  // is not a category. category_id(label) is the inverse (0 for label 0 or
  // out of range).
  size_t num_classes() const { return categories_.size(); }
  int64_t label(int64_t category_id) const;
  int64_t category_id(int64_t label) const;

  // Indices into images() that torchvision's detection reference trains on
  // (_coco_remove_images_without_annotations): images with at least one
  // annotation (crowds count) whose boxes are not all empty (w <= 1 or
  // h <= 1), and not made unusable by a skipped annotation.
  std::vector<uint32_t> training_indices() const;
  // Every usable image, for evaluation.
  std::vector<uint32_t> all_indices() const;

 private:
  friend class CocoJsonReader;
  std::string source_;
  std::string image_dir_;
  std::vector<DatasetImage> images_;
  std::vector<CocoAnnotation> annotations_;
  std::vector<CocoCategory> categories_;
  std::unordered_map<int64_t, uint32_t> image_index_;
  std::unordered_map<int64_t, int64_t> label_of_category_;
};

}  // namespace dtrain::vision
