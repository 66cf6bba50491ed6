#include "vision/data/synthetic_coco_writer.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/data/image_codec.h"
#include "vision/data/transforms.h"
#include "vision/coco/coco_error.h"
#include "concurrency/mutex.h"
#include "concurrency/parallel_for.h"

namespace dtrain::vision {
namespace {

nlohmann::ordered_json segmentation_json(const Segmentation& segmentation) {
  if (const auto* polygons = std::get_if<Polygons>(&segmentation)) return *polygons;
  if (const auto* rle = std::get_if<CompressedRle>(&segmentation)) {
    nlohmann::ordered_json j;
    j["size"] = {rle->height, rle->width};
    j["counts"] = rle->counts;
    return j;
  }
  if (const auto* mask = std::get_if<RunLengthMask>(&segmentation)) {
    nlohmann::ordered_json j;
    j["size"] = {mask->height, mask->width};
    j["counts"] = mask->counts;
    return j;
  }
  throw CocoError("synthetic instance without a segmentation");
}

void write_split(const SyntheticSpec& spec, const std::string& split, size_t count,
                 const std::vector<CocoCategory>& categories, const std::string& description,
                 const ImageGenerator& generate) {
  namespace fs = std::filesystem;
  const fs::path image_dir = fs::path(spec.out_dir) / split;
  const fs::path json_path = fs::path(spec.out_dir) / "annotations" / ("instances_" + split + ".json");
  fs::create_directories(image_dir);
  fs::create_directories(json_path.parent_path());

  struct Written {
    uint32_t height = 0, width = 0;
    std::vector<SyntheticInstance> instances;
  };
  std::vector<Written> written(count);
  // Images written so far, counted and reported with the mutex held.
  struct Progress {
    concurrency::Mutex mutex;
    size_t done DTRAIN_GUARDED_BY(mutex) = 0;
  } progress;
  const size_t step = std::max<size_t>(1, std::min<size_t>(100, (count + 9) / 10));
  const uint32_t low = spec.min_size == 0 ? spec.size : std::min(spec.min_size, spec.size);
  const uint64_t split_key = split == "train" ? 1 : 2;
  concurrency::parallel_for(count, spec.threads, [&](size_t i) {
    SampleRng rng(mix_seed(spec.seed, split_key, i));
    const auto height = static_cast<uint32_t>(low + rng.below(spec.size - low + 1));
    const auto width = static_cast<uint32_t>(low + rng.below(spec.size - low + 1));
    SyntheticImage image = generate(split, i, height, width, rng.next());
    const std::string name = fmt::format("{:012d}.png", i + 1);
    write_file_bytes((image_dir / name).string(), encode_png(image.image));
    written[i] = {image.image.height, image.image.width, std::move(image.instances)};
    concurrency::MutexLock lock(progress.mutex);
    ++progress.done;
    if (spec.progress && (progress.done % step == 0 || progress.done == count)) {
      spec.progress(fmt::format("wrote {}/{} {} images", progress.done, count, split));
    }
  });

  nlohmann::ordered_json dataset;
  dataset["info"] = {{"description", description},
                     {"version", "1.0"},
                     {"year", 2024},
                     {"contributor", "dtrain data"},
                     {"seed", spec.seed}};
  dataset["licenses"] = nlohmann::ordered_json::array();
  auto& images = dataset["images"] = nlohmann::ordered_json::array();
  auto& annotations = dataset["annotations"] = nlohmann::ordered_json::array();
  int64_t annotation_id = 0;
  for (size_t i = 0; i < count; ++i) {
    const int64_t image_id = static_cast<int64_t>(i + 1);
    images.push_back({{"id", image_id},
                      {"file_name", fmt::format("{:012d}.png", i + 1)},
                      {"height", written[i].height},
                      {"width", written[i].width}});
    for (const SyntheticInstance& instance : written[i].instances) {
      nlohmann::ordered_json a;
      a["id"] = ++annotation_id;
      a["image_id"] = image_id;
      a["category_id"] = instance.category_id;
      a["segmentation"] = segmentation_json(instance.segmentation);
      a["area"] = instance.area;
      a["bbox"] = {instance.bbox.x, instance.bbox.y, instance.bbox.width, instance.bbox.height};
      a["iscrowd"] = 0;
      annotations.push_back(std::move(a));
    }
  }
  auto& cats = dataset["categories"] = nlohmann::ordered_json::array();
  for (const CocoCategory& c : categories) {
    cats.push_back({{"id", c.id}, {"name", c.name}, {"supercategory", description}});
  }
  std::ofstream out(json_path, std::ios::binary | std::ios::trunc);
  out << dataset.dump() << "\n";
  out.close();
  if (!out) throw CocoError(fmt::format("{}: cannot write file", json_path.string()));
  if (spec.progress) {
    spec.progress(fmt::format("wrote {} ({} images, {} annotations)", json_path.string(), count, annotation_id));
  }
}

}  // namespace

void write_synthetic_dataset(const SyntheticSpec& spec, const std::vector<CocoCategory>& categories,
                             const std::string& description, const ImageGenerator& generate) {
  if (spec.out_dir.empty()) throw CocoError("no output directory given");
  if (spec.size < 16) throw CocoError(fmt::format("image size {} is too small (at least 16)", spec.size));
  write_split(spec, "train", spec.train, categories, description, generate);
  write_split(spec, "val", spec.val, categories, description, generate);
}

}  // namespace dtrain::vision
