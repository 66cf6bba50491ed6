// dtrain-bench-coco-loader: times the COCO data pipeline without a model.
//  1. Annotations: writes a synthetic instances JSON the size of COCO
//     train2017 (118,287 images, 860,001 annotations: polygons of 10-42
//     vertices with two decimals, 1% crowds as uncompressed RLE, 80
//     non-contiguous categories; about as many bytes as the real 448 MB
//     file) and times CocoDataset::load on it.
//  2. Loader: generates a shapes set (512-800 px PNGs) and times the
//     DataLoader (decode, targets with masks, flip, normalise, resize to
//     800/1333) for 1 and 2 worker threads.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "vision/data/coco_dataset.h"
#include "vision/data/data_loader.h"
#include "vision/data/image_codec.h"
#include "vision/data/synthetic_shapes.h"
#include "vision/data/transforms.h"
#include "vision/coco/coco_error.h"

namespace {

namespace fs = std::filesystem;
namespace vision = dtrain::vision;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// COCO's 80 category ids (1..90 with gaps).
constexpr int kCategoryIds[80] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                  22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
                                  46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
                                  67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90};

// Writes the train2017-sized file and returns its size in bytes.
size_t write_train2017_sized_json(const fs::path& path, size_t images, size_t annotations, uint64_t seed) {
  vision::SampleRng rng(seed);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  fmt::memory_buffer buffer;
  size_t written = 0;
  const auto flush = [&](bool force) {
    if (buffer.size() > (8u << 20) || force) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      written += buffer.size();
      buffer.clear();
    }
  };
  auto it = std::back_inserter(buffer);
  fmt::format_to(it, "{{\"info\":{{\"description\":\"train2017-sized synthetic\"}},\"licenses\":[],\"images\":[");
  std::vector<std::pair<uint32_t, uint32_t>> sizes(images);
  for (size_t i = 0; i < images; ++i) {
    const bool portrait = rng.below(3) == 0;
    const uint32_t w = portrait ? 480 - static_cast<uint32_t>(rng.below(100)) : 640;
    const uint32_t h = portrait ? 640 : 480 - static_cast<uint32_t>(rng.below(100));
    sizes[i] = {h, w};
    fmt::format_to(
        it,
        "{}{{\"license\":3,\"file_name\":\"{:012d}.jpg\",\"coco_url\":\"http://images.cocodataset.org/train2017/"
        "{:012d}.jpg\",\"height\":{},\"width\":{},\"date_captured\":\"2013-11-14 11:18:45\",\"id\":{}}}",
        i ? "," : "", i + 1, i + 1, h, w, i + 1);
    flush(false);
  }
  fmt::format_to(it, "],\"annotations\":[");
  for (size_t a = 0; a < annotations; ++a) {
    const size_t image = a * images / annotations;
    const auto [h, w] = sizes[image];
    const bool crowd = rng.below(100) == 0;
    const double bw = 4 + rng.uniform() * (w / 2.0), bh = 4 + rng.uniform() * (h / 2.0);
    const double bx = rng.uniform() * (w - bw), by = rng.uniform() * (h - bh);
    fmt::format_to(it, "{}{{\"segmentation\":", a ? "," : "");
    if (crowd) {
      fmt::format_to(it, "{{\"counts\":[");
      uint64_t left = uint64_t{h} * w;
      bool first = true;
      while (left > 0) {
        const uint64_t run = std::min<uint64_t>(left, 1 + rng.below(2000));
        fmt::format_to(it, "{}{}", first ? "" : ",", run);
        left -= run;
        first = false;
      }
      fmt::format_to(it, "],\"size\":[{},{}]}}", h, w);
    } else {
      const int vertices = 10 + static_cast<int>(rng.below(33));
      fmt::format_to(it, "[[");
      for (int v = 0; v < vertices; ++v) {
        fmt::format_to(it, "{}{:.2f},{:.2f}", v ? "," : "", bx + rng.uniform() * bw, by + rng.uniform() * bh);
      }
      fmt::format_to(it, "]]");
    }
    fmt::format_to(it,
                   ",\"area\":{:.4f},\"iscrowd\":{},\"image_id\":{},\"bbox\":[{:.2f},{:.2f},{:.2f},{:.2f}],\"category_"
                   "id\":{},\"id\":{}}}",
                   bw * bh * 0.6, crowd ? 1 : 0, image + 1, bx, by, bw, bh, kCategoryIds[rng.below(80)], a + 1);
    flush(false);
  }
  fmt::format_to(it, "],\"categories\":[");
  for (int c = 0; c < 80; ++c) {
    fmt::format_to(it, "{}{{\"supercategory\":\"thing\",\"id\":{},\"name\":\"category{}\"}}", c ? "," : "",
                   kCategoryIds[c], kCategoryIds[c]);
  }
  fmt::format_to(it, "]}}\n");
  flush(true);
  out.close();
  if (!out) throw vision::CocoError(fmt::format("{}: cannot write", path.string()));
  return written;
}

void emit(std::FILE* json, const std::string& line) {
  if (json != nullptr) std::fprintf(json, "%s\n", line.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times the COCO data pipeline: train2017-sized annotation loading and the loader's images/s",
               "dtrain-bench-coco-loader"};
  size_t json_images = 118287, json_annotations = 860001, loader_images = 200;
  uint32_t size = 800, min_size = 512;
  size_t batch_size = 2;
  std::string json_path, keep_dir;
  bool skip_json = false;
  app.add_option("--json-images", json_images, "Images in the annotation file")->default_val(json_images);
  app.add_option("--json-annotations", json_annotations, "Annotations in the annotation file")
      ->default_val(json_annotations);
  app.add_flag("--skip-annotations", skip_json, "Skip the annotation-file benchmark");
  app.add_option("--images", loader_images, "Images in the loader's shapes set")->default_val(loader_images);
  app.add_option("--size", size, "Longest image side")->default_val(size);
  app.add_option("--min-size", min_size, "Shortest image side")->default_val(min_size);
  app.add_option("--batch-size", batch_size, "Loader batch size")->default_val(batch_size);
  app.add_option("--json", json_path, "Append one JSON line per measurement to this file");
  app.add_option("--keep-dir", keep_dir, "Generate into this directory and keep it");
  CLI11_PARSE(app, argc, argv);

  std::FILE* json = nullptr;
  if (!json_path.empty()) {
    json = std::fopen(json_path.c_str(), "a");
    if (json == nullptr) {
      std::fprintf(stderr, "dtrain-bench-coco-loader: cannot open %s\n", json_path.c_str());
      return 1;
    }
  }
  const bool temporary = keep_dir.empty();
  const fs::path dir =
      temporary ? fs::temp_directory_path() / fmt::format("dtrain-bench-coco-loader-{}", getpid()) : fs::path(keep_dir);
  int status = 0;
  try {
    fs::create_directories(dir);
    if (!skip_json) {
      const fs::path path = dir / "instances_train2017_sized.json";
      auto start = Clock::now();
      const size_t bytes = write_train2017_sized_json(path, json_images, json_annotations, 2017);
      const double write_s = seconds_since(start);
      start = Clock::now();
      const vision::CocoDataset ds = vision::CocoDataset::load(path.string(), "");
      const double load_s = seconds_since(start);
      start = Clock::now();
      const size_t training = ds.training_indices().size();
      const double filter_s = seconds_since(start);
      fmt::print("annotations: {} images, {} annotations, {:.0f} MB (written in {:.1f} s)\n", ds.images().size(),
                 ds.annotations().size(), bytes / 1e6, write_s);
      fmt::print(
          "annotations: CocoDataset::load {:.2f} s ({:.0f} MB/s); training filter {:.3f} s "
          "keeps {} images\n",
          load_s, bytes / 1e6 / load_s, filter_s, training);
      emit(json, fmt::format("{{\"bench\":\"coco_loader\",\"what\":\"annotations_load\",\"images\":{},"
                             "\"annotations\":{},\"bytes\":{},\"seconds\":{:.4f}}}",
                             ds.images().size(), ds.annotations().size(), bytes, load_s));
      if (temporary) fs::remove(path);
    }

    vision::SyntheticSpec spec;
    spec.out_dir = (dir / "shapes").string();
    spec.train = loader_images;
    spec.val = 0;
    spec.size = size;
    spec.min_size = min_size;
    spec.seed = 1;
    auto start = Clock::now();
    vision::make_shapes_dataset(spec);
    fmt::print("loader: generated {} shapes images at {}-{} px in {:.1f} s\n", loader_images, min_size, size,
               seconds_since(start));
    const vision::CocoDataset ds = vision::CocoDataset::load((dir / "shapes/annotations/instances_train.json").string(),
                                                             (dir / "shapes/train").string());
    {
      // The decoder alone, one thread: what the rest of the pipeline adds to.
      for (const auto& image : ds.images()) vision::read_image(ds.image_path(image));
      start = Clock::now();
      for (const auto& image : ds.images()) vision::read_image(ds.image_path(image));
      const double s = seconds_since(start);
      const double rate = static_cast<double>(ds.images().size()) / s;
      fmt::print("loader: PNG decode alone, 1 thread: {:.1f} images/s\n", rate);
      emit(json, fmt::format("{{\"bench\":\"coco_loader\",\"what\":\"decode_png\",\"workers\":1,"
                             "\"images\":{},\"seconds\":{:.4f},\"images_per_s\":{:.2f}}}",
                             ds.images().size(), s, rate));
    }
    for (int workers : {1, 2}) {
      vision::LoaderOptions options;
      options.batch_size = batch_size;
      options.workers = workers;
      options.prefetch_batches = 4;
      options.seed = 7;
      vision::DataLoader loader(ds, options);
      // Warm the page cache and the allocator with a first epoch, time the second.
      loader.start_epoch(0);
      while (loader.next()) {}
      start = Clock::now();
      loader.start_epoch(1);
      size_t images = 0;
      while (auto batch = loader.next()) images += batch->samples.size();
      const double s = seconds_since(start);
      fmt::print(
          "loader: {} worker thread{}: {:.1f} images/s ({} images in {:.2f} s, batch {}, "
          "resize to 800/1333)\n",
          workers, workers == 1 ? "" : "s", images / s, images, s, batch_size);
      emit(json, fmt::format("{{\"bench\":\"coco_loader\",\"what\":\"loader\",\"workers\":{},"
                             "\"images\":{},\"seconds\":{:.4f},\"images_per_s\":{:.2f},"
                             "\"min_size\":{},\"size\":{}}}",
                             workers, images, s, images / s, min_size, size));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-coco-loader: %s\n", e.what());
    status = 1;
  }
  if (json != nullptr) std::fclose(json);
  if (temporary) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  }
  return status;
}
