// Reads COCO instances JSON into a CocoDataset with simdjson's DOM parser
// (vision/coco/json_syntax.h: malformed text is named with its line and column).
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "vision/data/coco_dataset.h"
#include "vision/coco/coco_error.h"
#include "vision/coco/json_syntax.h"
#include "vision/coco/rle_string.h"

namespace dtrain::vision {
namespace {

namespace dom = simdjson::dom;

// Why an entry is unusable; the reader decides whether that stops loading.
struct EntryFault {
  std::string message;
};

// One object of a list, with typed field access. A failure throws EntryFault
// with "FILE: LIST[INDEX] (id N): what"; the id is added once it is known.
class Entry {
 public:
  Entry(dom::element value, const std::string& source, const char* list, size_t index)
      : source_(source), list_(list), index_(index) {
    if (value.get_object().get(object_) != simdjson::SUCCESS) {
      fail(fmt::format("expected an object, got {}", json_type_name(value.type())));
    }
  }

  std::string location() const {
    if (id_) return fmt::format("{}: {}[{}] (id {})", source_, list_, index_, *id_);
    return fmt::format("{}: {}[{}]", source_, list_, index_);
  }
  [[noreturn]] void fail(const std::string& what) const { throw EntryFault{fmt::format("{}: {}", location(), what)}; }

  std::optional<dom::element> find(const char* name) const {
    dom::element v;
    if (object_[name].get(v) != simdjson::SUCCESS) return std::nullopt;
    return v;
  }
  dom::element field(const char* name) const {
    auto v = find(name);
    if (!v) fail(fmt::format("missing field '{}'", name));
    return *v;
  }
  double number(dom::element v, const char* name) const {
    double d = 0;
    if (v.get_double().get(d) != simdjson::SUCCESS) {
      fail(fmt::format("field '{}' must be a number, got {}", name, json_type_name(v.type())));
    }
    return d;
  }
  double number(const char* name) const { return number(field(name), name); }
  int64_t integer(const char* name) const {
    const dom::element v = field(name);
    int64_t i = 0;
    if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
    double d = 0;
    if (v.get_double().get(d) == simdjson::SUCCESS && std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15) {
      return static_cast<int64_t>(d);
    }
    fail(fmt::format("field '{}' must be an integer, got {}", name, simdjson::minify(v)));
  }
  uint32_t dimension(const char* name) const {
    const int64_t v = integer(name);
    if (v <= 0 || v >= (int64_t{1} << 31)) fail(fmt::format("field '{}' must be a size > 0, got {}", name, v));
    return static_cast<uint32_t>(v);
  }
  bool flag(const char* name) const {
    const dom::element v = field(name);
    bool b = false;
    if (v.get_bool().get(b) == simdjson::SUCCESS) return b;
    double d = 0;
    if (v.get_double().get(d) == simdjson::SUCCESS && (d == 0 || d == 1)) return d != 0;
    fail(fmt::format("field '{}' must be 0 or 1, got {}", name, simdjson::minify(v)));
  }
  std::string text(const char* name) const {
    std::string_view s;
    if (field(name).get_string().get(s) != simdjson::SUCCESS) {
      fail(fmt::format("field '{}' must be a string", name));
    }
    return std::string(s);
  }
  void set_id(int64_t id) { id_ = id; }

 private:
  dom::object object_;
  const std::string& source_;
  const char* list_;
  size_t index_;
  std::optional<int64_t> id_;
};

BoundingBox read_box(const Entry& entry) {
  dom::array a;
  const dom::element v = entry.field("bbox");
  if (v.get_array().get(a) != simdjson::SUCCESS || a.size() != 4) {
    entry.fail(fmt::format("field 'bbox' must be [x, y, width, height], got {}", simdjson::minify(v)));
  }
  double xywh[4];
  size_t i = 0;
  for (dom::element c : a) xywh[i++] = entry.number(c, "bbox");
  if (!(std::isfinite(xywh[0]) && std::isfinite(xywh[1]) && std::isfinite(xywh[2]) && std::isfinite(xywh[3])) ||
      xywh[2] < 0 || xywh[3] < 0) {
    entry.fail(fmt::format("field 'bbox' must have finite x, y and width, height >= 0, got {}", simdjson::minify(v)));
  }
  return {xywh[0], xywh[1], xywh[2], xywh[3]};
}

uint64_t counts_total(const RunLengthMask& mask) {
  uint64_t total = 0;
  for (uint32_t c : mask.counts) total += c;
  return total;
}

Segmentation read_segmentation(const Entry& entry, dom::element v, uint32_t image_height, uint32_t image_width) {
  dom::array polygons;
  if (v.get_array().get(polygons) == simdjson::SUCCESS) {
    Polygons out;
    out.reserve(polygons.size());
    if (polygons.size() == 0) entry.fail("segmentation is an empty list of polygons");
    size_t k = 0;
    for (dom::element p : polygons) {
      dom::array xy;
      if (p.get_array().get(xy) != simdjson::SUCCESS) {
        entry.fail("field 'segmentation' must be a list of polygons (lists of numbers)");
      }
      const size_t numbers = xy.size();
      if (numbers < 6) {
        const std::string which = polygons.size() == 1 ? "polygon" : fmt::format("polygon {}", k);
        entry.fail(fmt::format("{} has {} point{}, needs at least 3", which, numbers / 2, numbers / 2 == 1 ? "" : "s"));
      }
      std::vector<double>& coordinates = out.emplace_back();
      coordinates.reserve(numbers);
      for (dom::element c : xy) {
        double d = 0;
        if (c.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d)) {
          entry.fail(fmt::format("polygon {} has a non-numeric coordinate {}", k, simdjson::minify(c)));
        }
        coordinates.push_back(d);
      }
      ++k;
    }
    return out;
  }
  dom::object rle;
  if (v.get_object().get(rle) != simdjson::SUCCESS) {
    entry.fail(fmt::format("field 'segmentation' must be polygons or an RLE object, got {}", json_type_name(v.type())));
  }
  dom::array size;
  dom::element counts;
  if (rle["size"].get_array().get(size) != simdjson::SUCCESS || size.size() != 2 ||
      rle["counts"].get(counts) != simdjson::SUCCESS) {
    entry.fail("segmentation RLE needs 'size': [height, width] and 'counts'");
  }
  int64_t hw[2] = {0, 0};
  size_t i = 0;
  for (dom::element s : size) {
    if (s.get_int64().get(hw[i]) != simdjson::SUCCESS || hw[i] < 0) {
      entry.fail("segmentation RLE 'size' must be [height, width]");
    }
    ++i;
  }
  if (hw[0] != image_height || hw[1] != image_width) {
    entry.fail(fmt::format("segmentation RLE size [{}, {}] differs from the image's [{}, {}]", hw[0], hw[1],
                           image_height, image_width));
  }
  const uint64_t pixels = uint64_t(image_height) * image_width;
  std::string_view text;
  if (counts.get_string().get(text) == simdjson::SUCCESS) {
    CompressedRle compressed{image_height, image_width, std::string(text)};
    RunLengthMask decoded;
    try {
      decoded = rle_from_counts_string(compressed.counts, image_height, image_width);
    } catch (const CocoError& e) {
      entry.fail(fmt::format("segmentation RLE counts: {}", e.what()));
    }
    if (counts_total(decoded) != pixels) {
      entry.fail(
          fmt::format("segmentation RLE counts cover {} pixels, the image has {}", counts_total(decoded), pixels));
    }
    return compressed;
  }
  dom::array list;
  if (counts.get_array().get(list) != simdjson::SUCCESS) {
    entry.fail("segmentation RLE 'counts' must be a string or a list");
  }
  RunLengthMask mask{image_height, image_width, {}};
  mask.counts.reserve(list.size());
  for (dom::element c : list) {
    uint64_t n = 0;
    if (c.get_uint64().get(n) != simdjson::SUCCESS || n > 0xFFFFFFFFu) {
      entry.fail("segmentation RLE 'counts' must hold non-negative integers");
    }
    mask.counts.push_back(static_cast<uint32_t>(n));
  }
  if (counts_total(mask) != pixels) {
    entry.fail(fmt::format("segmentation RLE counts cover {} pixels, the image has {}", counts_total(mask), pixels));
  }
  return mask;
}

dom::array required_list(dom::element root, const std::string& source, const char* name) {
  dom::element v;
  if (root[name].get(v) != simdjson::SUCCESS) {
    throw CocoError(fmt::format("{}: missing list '{}'", source, name));
  }
  dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) {
    throw CocoError(fmt::format("{}: '{}' must be a list", source, name));
  }
  return a;
}

}  // namespace

class CocoJsonReader {
 public:
  static CocoDataset read(const simdjson::padded_string& text, const std::string& source, const std::string& image_dir,
                          const CocoDatasetOptions& options);
};

CocoDataset CocoJsonReader::read(const simdjson::padded_string& text, const std::string& source,
                                 const std::string& image_dir, const CocoDatasetOptions& options) {
  dom::parser parser;
  const dom::element root = parse_coco_json(parser, text, source);
  if (root.type() != dom::element_type::OBJECT) {
    throw CocoError(
        fmt::format("{}: expected a COCO dataset object with 'images', 'annotations' and 'categories'", source));
  }
  const bool skip = options.policy == BadInputPolicy::kSkip;
  CocoDataset ds;
  ds.source_ = source;
  ds.image_dir_ = image_dir;

  // Images and categories are the index everything else points into: a
  // fault there always stops.
  const dom::array images = required_list(root, source, "images");
  ds.images_.reserve(images.size());
  ds.image_index_.reserve(images.size());
  size_t index = 0;
  for (dom::element value : images) {
    try {
      Entry entry(value, source, "images", index);
      DatasetImage image;
      image.id = entry.integer("id");
      entry.set_id(image.id);
      image.width = entry.dimension("width");
      image.height = entry.dimension("height");
      image.file_name = entry.text("file_name");
      if (!ds.image_index_.emplace(image.id, static_cast<uint32_t>(ds.images_.size())).second) {
        entry.fail("duplicate image id");
      }
      ds.images_.push_back(std::move(image));
    } catch (const EntryFault& fault) {
      throw CocoError(fault.message);
    }
    ++index;
  }

  const dom::array categories = required_list(root, source, "categories");
  index = 0;
  for (dom::element value : categories) {
    try {
      Entry entry(value, source, "categories", index);
      CocoCategory category;
      category.id = entry.integer("id");
      entry.set_id(category.id);
      if (entry.find("name")) category.name = entry.text("name");
      if (!ds.label_of_category_.emplace(category.id, 0).second) entry.fail("duplicate category id");
      ds.categories_.push_back(std::move(category));
    } catch (const EntryFault& fault) {
      throw CocoError(fault.message);
    }
    ++index;
  }
  std::sort(ds.categories_.begin(), ds.categories_.end(),
            [](const CocoCategory& a, const CocoCategory& b) { return a.id < b.id; });
  for (size_t i = 0; i < ds.categories_.size(); ++i) {
    ds.label_of_category_[ds.categories_[i].id] = static_cast<int64_t>(i + 1);
  }

  const dom::array annotations = required_list(root, source, "annotations");
  std::vector<CocoAnnotation> read;
  std::vector<uint32_t> owner;  // image index of read[i]
  read.reserve(annotations.size());
  owner.reserve(annotations.size());
  index = 0;
  for (dom::element value : annotations) {
    int64_t bad_image = -1;  // image made unusable when this entry is skipped
    try {
      Entry entry(value, source, "annotations", index);
      CocoAnnotation ann;
      ann.id = entry.integer("id");
      entry.set_id(ann.id);
      ann.image_id = entry.integer("image_id");
      const auto image = ds.image_index_.find(ann.image_id);
      if (image == ds.image_index_.end()) {
        entry.fail(fmt::format("image_id {} is not in 'images'", ann.image_id));
      }
      bad_image = image->second;
      const DatasetImage& info = ds.images_[image->second];
      ann.category_id = entry.integer("category_id");
      if (!ds.label_of_category_.contains(ann.category_id)) {
        entry.fail(fmt::format("category_id {} is not in 'categories'", ann.category_id));
      }
      ann.bbox = read_box(entry);
      ann.iscrowd = entry.find("iscrowd") ? entry.flag("iscrowd") : false;
      ann.area = entry.find("area") ? entry.number("area") : ann.bbox.width * ann.bbox.height;
      if (auto s = entry.find("segmentation")) {
        ann.segmentation = read_segmentation(entry, *s, info.height, info.width);
      }
      read.push_back(std::move(ann));
      owner.push_back(image->second);
    } catch (const EntryFault& fault) {
      if (!skip) throw CocoError(fault.message);
      if (bad_image >= 0) {
        ds.images_[static_cast<size_t>(bad_image)].unusable = true;
        emit_warning(options.warn, fault.message + "; skipping image " +
                                       std::to_string(ds.images_[static_cast<size_t>(bad_image)].id));
      } else {
        emit_warning(options.warn, fault.message + "; skipping the annotation");
      }
    }
    ++index;
  }

  // Group by image with a stable counting sort: file order within an image.
  std::vector<uint32_t> start(ds.images_.size() + 1, 0);
  for (uint32_t o : owner) ++start[o + 1];
  for (size_t i = 0; i < ds.images_.size(); ++i) {
    start[i + 1] += start[i];
    ds.images_[i].first_annotation = start[i];
    ds.images_[i].annotation_count = start[i + 1] - start[i];
  }
  ds.annotations_.resize(read.size());
  for (size_t i = 0; i < read.size(); ++i) ds.annotations_[start[owner[i]]++] = std::move(read[i]);
  return ds;
}

CocoDataset CocoDataset::load(const std::string& json_path, const std::string& image_dir,
                              const CocoDatasetOptions& options) {
  simdjson::padded_string text;
  if (simdjson::padded_string::load(json_path).get(text) != simdjson::SUCCESS) {
    throw CocoError(fmt::format("{}: cannot read file", json_path));
  }
  return CocoJsonReader::read(text, json_path, image_dir, options);
}

CocoDataset CocoDataset::parse(std::string_view json_text, const std::string& source, const std::string& image_dir,
                               const CocoDatasetOptions& options) {
  const simdjson::padded_string text(json_text);
  return CocoJsonReader::read(text, source, image_dir, options);
}

}  // namespace dtrain::vision
