#include "bench/coco_eval/real_annotation_coco.h"

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "concurrency/parallel_for.h"
#include "vision/coco/coco_error.h"
#include "vision/coco/mask_api.h"

namespace dtrain::bench {
namespace {

using vision::RunLengthMask;
using Json = nlohmann::ordered_json;

// Image ids of the copies: copy * kImageIdStride + the source's id.
constexpr int64_t kImageIdStride = 1'000'000;

struct SourceAnnotation {
  const Json* json;
  size_t ordinal;  // position in the source's file order, for the copies' ids
};

struct SourceImage {
  const Json* image;
  uint32_t width = 0, height = 0;
  std::vector<SourceAnnotation> annotations;
};

// An object outline: the polygon parts of a (non-crowd) annotation.
struct Outline {
  std::vector<std::vector<double>> parts;
  double cx = 0, cy = 0;  // the centre of its box
  int64_t category_id = 0;
};

Outline outline_of(const Json& annotation) {
  Outline out;
  for (const Json& part : annotation["segmentation"]) out.parts.push_back(part.get<std::vector<double>>());
  const Json& box = annotation["bbox"];
  out.cx = box[0].get<double>() + box[2].get<double>() / 2;
  out.cy = box[1].get<double>() + box[3].get<double>() / 2;
  out.category_id = annotation["category_id"].get<int64_t>();
  return out;
}

// The outline moved so that its centre lands on (cx, cy), scaled about its
// centre and every vertex jittered, clipped to the image and rasterized.
RunLengthMask transformed_mask(const Outline& outline, double cx, double cy, double scale, double jitter,
                               uint32_t width, uint32_t height, SplitMixRandom& rng) {
  std::vector<RunLengthMask> parts;
  for (const auto& part : outline.parts) {
    std::vector<double> xy(part.size());
    for (size_t i = 0; i + 1 < part.size(); i += 2) {
      xy[i] = std::clamp(cx + scale * (part[i] - outline.cx) + rng.uniform(-jitter, jitter), 0.0, double(width));
      xy[i + 1] =
          std::clamp(cy + scale * (part[i + 1] - outline.cy) + rng.uniform(-jitter, jitter), 0.0, double(height));
    }
    parts.push_back(vision::rle_from_polygon(xy, height, width));
  }
  return parts.size() == 1 ? std::move(parts.front()) : vision::rle_merge(parts);
}

// A crowd region's mask moved right by whole columns (column-major runs: one
// column is `height` pixels), as a detection that overlaps the crowd.
RunLengthMask shifted_right(const RunLengthMask& mask, uint32_t columns) {
  RunLengthMask out = mask;
  if (out.counts.empty()) return out;
  const uint64_t total = uint64_t(mask.height) * mask.width;
  out.counts.front() += columns * mask.height;
  uint64_t covered = 0;
  size_t keep = 0;
  while (keep < out.counts.size() && covered + out.counts[keep] <= total) covered += out.counts[keep++];
  if (keep < out.counts.size() && covered < total) out.counts[keep++] = static_cast<uint32_t>(total - covered);
  out.counts.resize(keep);
  return out;
}

RunLengthMask crowd_mask(const Json& annotation, uint32_t width, uint32_t height) {
  const Json& segmentation = annotation["segmentation"];
  const Json& counts = segmentation["counts"];
  if (counts.is_string()) return vision::rle_from_counts_string(counts.get<std::string>(), height, width);
  RunLengthMask mask;
  mask.height = height;
  mask.width = width;
  mask.counts = counts.get<std::vector<uint32_t>>();
  return mask;
}

// The parsed source, in the shapes the generator reads.
struct Source {
  Json json;
  std::vector<SourceImage> images;
  std::vector<Outline> outlines;  // every polygon annotation's, for false positives
  std::vector<int64_t> category_ids;
  size_t annotations = 0;
};

// One image of the set as JSON texts.
struct CopyText {
  std::string image, annotations, boxes, masks;
  size_t annotation_count = 0, detection_count = 0;
};

void append(std::string& list, const std::string& item) {
  if (!list.empty()) list += ',';
  list += item;
}

class ImageGenerator {
 public:
  ImageGenerator(const Source& source, const RealAnnotationCocoSpec& spec)
      : images_(source.images),
        outlines_(source.outlines),
        category_ids_(source.category_ids),
        source_annotations_(source.annotations),
        spec_(spec) {}

  // Image `index` of the set: copy index / sources of source image index % sources.
  CopyText generate(size_t index) const {
    const size_t copy = index / images_.size();
    const SourceImage& source = images_[index % images_.size()];
    SplitMixRandom rng(spec_.seed * 1000003ull + index);
    CopyText out;
    Json image = *source.image;
    const int64_t image_id = static_cast<int64_t>(copy) * kImageIdStride + image["id"].get<int64_t>();
    image["id"] = image_id;
    out.image = image.dump();

    int made = 0;
    for (const SourceAnnotation& source_annotation : source.annotations) {
      Json annotation = *source_annotation.json;
      annotation["id"] = static_cast<int64_t>(copy * source_annotations_ + source_annotation.ordinal + 1);
      annotation["image_id"] = image_id;
      append(out.annotations, annotation.dump());
      ++out.annotation_count;
      const bool crowd = annotation["iscrowd"].get<int>() != 0;
      const int near = crowd ? 1 : rng.integer(1, 3);
      for (int n = 0; n < near && made < spec_.detections_per_image; ++n) {
        made += near_detection(*source_annotation.json, crowd, source, image_id, rng, out) ? 1 : 0;
      }
    }
    // Pure false positives: real outlines of other objects at random places,
    // scored low, as a detector fills its 100.
    for (int tries = 0; made < spec_.detections_per_image && tries < 4 * spec_.detections_per_image; ++tries) {
      const Outline& other = outlines_[rng.next() % outlines_.size()];
      const RunLengthMask mask = transformed_mask(other, rng.uniform(0, source.width), rng.uniform(0, source.height),
                                                  rng.uniform(0.5, 1.5), 1.0, source.width, source.height, rng);
      const int64_t category = category_ids_[rng.next() % category_ids_.size()];
      made += add_detection(mask, category, rng.uniform(0.001, 0.3), image_id, out) ? 1 : 0;
    }
    return out;
  }

 private:
  // A detection of this object: near it, sometimes with the wrong class.
  bool near_detection(const Json& annotation, bool crowd, const SourceImage& source, int64_t image_id,
                      SplitMixRandom& rng, CopyText& out) const {
    const double spread = rng.uniform(0.0, 0.25);
    int64_t category = annotation["category_id"].get<int64_t>();
    if (rng.chance(0.15)) category = category_ids_[rng.next() % category_ids_.size()];
    const double score = rng.uniform(0.3, 1.0) * (1 - spread);
    if (crowd) {
      const RunLengthMask mask = crowd_mask(annotation, source.width, source.height);
      return add_detection(shifted_right(mask, static_cast<uint32_t>(rng.integer(0, 20))), category, score, image_id,
                           out);
    }
    const Outline outline = outline_of(annotation);
    const Json& box = annotation["bbox"];
    const double w = box[2].get<double>(), h = box[3].get<double>();
    const RunLengthMask mask = transformed_mask(outline, outline.cx + spread * w * rng.uniform(-1, 1),
                                                outline.cy + spread * h * rng.uniform(-1, 1), rng.uniform(0.8, 1.2),
                                                1.5, source.width, source.height, rng);
    return add_detection(mask, category, score, image_id, out);
  }

  static bool add_detection(const RunLengthMask& mask, int64_t category, double score, int64_t image_id,
                            CopyText& out) {
    if (vision::rle_area(mask) == 0) return false;
    const vision::BoundingBox box = vision::rle_to_bbox(mask);
    append(out.boxes, fmt::format(R"({{"image_id":{},"category_id":{},"bbox":[{},{},{},{}],"score":{:.3f}}})", image_id,
                                  category, box.x, box.y, box.width, box.height, score));
    append(out.masks, fmt::format(R"({{"image_id":{},"category_id":{},"segmentation":{{"size":[{},{}],"counts":"{}"}},)"
                                  R"("score":{:.3f}}})",
                                  image_id, category, mask.height, mask.width,
                                  json_escaped_counts(vision::rle_counts_to_string(mask)), score));
    ++out.detection_count;
    return true;
  }

  const std::vector<SourceImage>& images_;
  const std::vector<Outline>& outlines_;
  const std::vector<int64_t>& category_ids_;
  const size_t source_annotations_;
  const RealAnnotationCocoSpec& spec_;
};

Source parse_source(const std::string& text) {
  Source source;
  try {
    source.json = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw vision::CocoError(fmt::format("real-annotation source: not JSON: {}", e.what()));
  }
  const Json& json = source.json;
  if (!json.contains("images") || !json.contains("annotations") || !json.contains("categories")) {
    throw vision::CocoError("real-annotation source: needs images, annotations and categories");
  }
  std::map<int64_t, size_t> image_index;
  for (const Json& image : json["images"]) {
    const int64_t id = image["id"].get<int64_t>();
    if (id < 0 || id >= kImageIdStride) {
      throw vision::CocoError(fmt::format("real-annotation source: image id {} outside [0, {})", id, kImageIdStride));
    }
    image_index[id] = source.images.size();
    source.images.push_back({&image, image["width"].get<uint32_t>(), image["height"].get<uint32_t>(), {}});
  }
  for (const Json& category : json["categories"]) source.category_ids.push_back(category["id"].get<int64_t>());
  for (const Json& annotation : json["annotations"]) {
    const auto found = image_index.find(annotation["image_id"].get<int64_t>());
    if (found == image_index.end()) continue;
    source.images[found->second].annotations.push_back({&annotation, source.annotations++});
    if (annotation["iscrowd"].get<int>() == 0) source.outlines.push_back(outline_of(annotation));
  }
  if (source.images.empty() || source.outlines.empty() || source.category_ids.empty()) {
    throw vision::CocoError("real-annotation source: needs images, polygon annotations and categories");
  }
  return source;
}

}  // namespace

GeneratedCocoSet generate_real_annotation_coco(const std::string& source_ground_truth,
                                               const RealAnnotationCocoSpec& spec, int threads) {
  const Source source = parse_source(source_ground_truth);
  const ImageGenerator generator(source, spec);
  std::vector<CopyText> texts(static_cast<size_t>(spec.images));
  concurrency::parallel_for(texts.size(), threads, [&](size_t i) { texts[i] = generator.generate(i); });

  GeneratedCocoSet out;
  std::string image_list, annotation_list;
  std::string boxes, masks;
  for (const CopyText& text : texts) {
    append(image_list, text.image);
    if (!text.annotations.empty()) append(annotation_list, text.annotations);
    if (!text.boxes.empty()) append(boxes, text.boxes);
    if (!text.masks.empty()) append(masks, text.masks);
    out.annotations += text.annotation_count;
    out.detections += text.detection_count;
  }
  out.box_results = "[" + boxes + "]";
  out.mask_results = "[" + masks + "]";
  out.ground_truth = fmt::format(R"json({{"info":{{"description":"dtrain real-annotation COCO (val2014 x{})"}},)json"
                                 R"json("images":[{}],"annotations":[{}],"categories":{}}})json",
                                 (spec.images + source.images.size() - 1) / source.images.size(), image_list,
                                 annotation_list, source.json["categories"].dump());
  return out;
}

}  // namespace dtrain::bench
