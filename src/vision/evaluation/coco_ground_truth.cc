#include "vision/evaluation/coco_ground_truth.h"

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/entry_chunks.h"
#include "vision/evaluation/json_dom.h"

namespace dtrain::vision {
namespace {

json_dom::dom::array required_list(json_dom::dom::object dataset, const std::string& source, const char* name) {
  const std::optional<json_dom::dom::element> list = json_dom::find(dataset, name);
  if (!list) throw CocoError(fmt::format("{}: missing list '{}'", source, name));
  json_dom::dom::array array;
  if (list->get_array().get(array) != simdjson::SUCCESS) {
    throw CocoError(fmt::format("{}: '{}' must be a list", source, name));
  }
  return array;
}

}  // namespace

CocoGroundTruth CocoGroundTruth::load(const std::string& path, int threads) {
  return read(json_dom::read_file(path), path, threads);
}

CocoGroundTruth CocoGroundTruth::parse(std::string_view json_text, const std::string& source, int threads) {
  return read(simdjson::padded_string(json_text), source, threads);
}

CocoGroundTruth CocoGroundTruth::read(const simdjson::padded_string& text, const std::string& source, int threads) {
  json_dom::dom::parser parser;
  json_dom::dom::object dataset;
  if (json_dom::parse(parser, text, source).get_object().get(dataset) != simdjson::SUCCESS) {
    throw CocoError(
        fmt::format("{}: expected a COCO dataset object with 'images', "
                    "'annotations' and 'categories'",
                    source));
  }
  CocoGroundTruth gt;
  gt.source_ = source;

  const json_dom::dom::array images = required_list(dataset, source, "images");
  gt.images_.reserve(images.size());
  size_t i = 0;
  for (const json_dom::dom::element value : images) {
    const json_dom::Entry entry(value, source, "images", i++);
    CocoImage image{entry.integer("id"), entry.dimension("height"), entry.dimension("width")};
    gt.image_index_[image.id] = gt.images_.size();
    gt.images_.push_back(image);
  }

  const json_dom::dom::array categories = required_list(dataset, source, "categories");
  gt.categories_.reserve(categories.size());
  i = 0;
  for (const json_dom::dom::element value : categories) {
    const json_dom::Entry entry(value, source, "categories", i++);
    gt.categories_.push_back({entry.integer("id"), entry.has("name") ? entry.text("name") : ""});
  }

  const json_dom::dom::array annotations = required_list(dataset, source, "annotations");
  std::vector<json_dom::dom::element> values;
  values.reserve(annotations.size());
  for (const json_dom::dom::element value : annotations) values.push_back(value);
  gt.annotations_.resize(values.size());
  for_each_entry(values.size(), threads, [&](size_t i) {
    const json_dom::Entry entry(values[i], source, "annotations", i);
    CocoAnnotation& ann = gt.annotations_[i];
    ann.id = entry.integer("id");
    ann.image_id = entry.integer("image_id");
    ann.category_id = entry.integer("category_id");
    ann.area = entry.number("area");
    ann.iscrowd = entry.flag("iscrowd");
    ann.bbox = entry.box("bbox");
    if (entry.has("segmentation")) ann.segmentation = entry.segmentation("segmentation");
  });
  return gt;
}

const CocoImage* CocoGroundTruth::find_image(int64_t id) const {
  const auto it = image_index_.find(id);
  return it == image_index_.end() ? nullptr : &images_[it->second];
}

}  // namespace dtrain::vision
