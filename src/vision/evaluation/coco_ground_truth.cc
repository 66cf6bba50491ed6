#include "vision/evaluation/coco_ground_truth.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/coco/json_entry.h"

namespace dtrain::vision {
namespace {

const nlohmann::json& required_list(const nlohmann::json& dataset, const std::string& source,
                                    const char* name) {
  const auto it = dataset.find(name);
  if (it == dataset.end()) throw CocoError(fmt::format("{}: missing list '{}'", source, name));
  if (!it->is_array()) throw CocoError(fmt::format("{}: '{}' must be a list", source, name));
  return *it;
}

}  // namespace

CocoGroundTruth CocoGroundTruth::load(const std::string& path) {
  return from_json(read_json_file(path), path);
}

CocoGroundTruth CocoGroundTruth::parse(std::string_view json_text, const std::string& source) {
  return from_json(parse_json_text(json_text, source), source);
}

CocoGroundTruth CocoGroundTruth::from_json(const nlohmann::json& dataset, const std::string& source) {
  if (!dataset.is_object()) {
    throw CocoError(fmt::format("{}: expected a COCO dataset object with 'images', "
                                "'annotations' and 'categories'", source));
  }
  CocoGroundTruth gt;
  gt.source_ = source;

  const auto& images = required_list(dataset, source, "images");
  gt.images_.reserve(images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    const JsonEntry entry(images[i], source, "images", i);
    CocoImage image{entry.integer("id"), entry.dimension("height"), entry.dimension("width")};
    gt.image_index_[image.id] = gt.images_.size();
    gt.images_.push_back(image);
  }

  const auto& categories = required_list(dataset, source, "categories");
  gt.categories_.reserve(categories.size());
  for (size_t i = 0; i < categories.size(); ++i) {
    const JsonEntry entry(categories[i], source, "categories", i);
    gt.categories_.push_back({entry.integer("id"), entry.has("name") ? entry.text("name") : ""});
  }

  const auto& annotations = required_list(dataset, source, "annotations");
  gt.annotations_.reserve(annotations.size());
  for (size_t i = 0; i < annotations.size(); ++i) {
    const JsonEntry entry(annotations[i], source, "annotations", i);
    CocoAnnotation ann;
    ann.id = entry.integer("id");
    ann.image_id = entry.integer("image_id");
    ann.category_id = entry.integer("category_id");
    ann.area = entry.number("area");
    ann.iscrowd = entry.flag("iscrowd");
    ann.bbox = entry.box("bbox");
    if (entry.has("segmentation")) ann.segmentation = entry.segmentation("segmentation");
    gt.annotations_.push_back(std::move(ann));
  }
  return gt;
}

const CocoImage* CocoGroundTruth::find_image(int64_t id) const {
  const auto it = image_index_.find(id);
  return it == image_index_.end() ? nullptr : &images_[it->second];
}

}  // namespace dtrain::vision
