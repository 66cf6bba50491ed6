#include "vision/data/coco_dataset.h"

#include <cstdio>
#include <filesystem>

namespace dtrain::vision {

void emit_warning(const WarningSink& sink, const std::string& message) {
  if (sink) {
    sink(message);
  } else {
    std::fprintf(stderr, "warning: %s\n", message.c_str());
  }
}

std::span<const CocoAnnotation> CocoDataset::annotations_of(const DatasetImage& image) const {
  return std::span<const CocoAnnotation>(annotations_).subspan(image.first_annotation, image.annotation_count);
}

std::string CocoDataset::image_path(const DatasetImage& image) const {
  if (image_dir_.empty()) return image.file_name;
  return (std::filesystem::path(image_dir_) / image.file_name).string();
}

const DatasetImage* CocoDataset::find_image(int64_t id) const {
  const auto it = image_index_.find(id);
  return it == image_index_.end() ? nullptr : &images_[it->second];
}

int64_t CocoDataset::label(int64_t category_id) const {
  const auto it = label_of_category_.find(category_id);
  return it == label_of_category_.end() ? 0 : it->second;
}

int64_t CocoDataset::category_id(int64_t label) const {
  if (label < 1 || static_cast<size_t>(label) > categories_.size()) return 0;
  return categories_[static_cast<size_t>(label - 1)].id;
}

std::vector<uint32_t> CocoDataset::training_indices() const {
  std::vector<uint32_t> kept;
  kept.reserve(images_.size());
  for (uint32_t i = 0; i < images_.size(); ++i) {
    const DatasetImage& image = images_[i];
    if (image.unusable || image.annotation_count == 0) continue;
    bool only_empty_boxes = true;
    for (const CocoAnnotation& a : annotations_of(image)) {
      if (a.bbox.width > 1 && a.bbox.height > 1) {
        only_empty_boxes = false;
        break;
      }
    }
    if (!only_empty_boxes) kept.push_back(i);
  }
  return kept;
}

std::vector<uint32_t> CocoDataset::all_indices() const {
  std::vector<uint32_t> kept;
  kept.reserve(images_.size());
  for (uint32_t i = 0; i < images_.size(); ++i) {
    if (!images_[i].unusable) kept.push_back(i);
  }
  return kept;
}

}  // namespace dtrain::vision
