// dtrain-bench-coco-eval: times COCO bbox and segm evaluation (load,
// evaluate, accumulate) on a deterministic synthetic set the size of COCO
// val2017 with a detector's results. pycocotools cannot be installed here, so
// the comparison is with published reference figures, and the output says so.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "bench/coco_eval/synthetic_coco.h"
#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_evaluator.h"
#include "concurrency/parallel_for.h"

namespace {

using Clock = std::chrono::steady_clock;
namespace vision = dtrain::vision;
namespace concurrency = dtrain::concurrency;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// pycocotools' evaluate() + accumulate() on COCO val2017 (5,000 images) with a
// Mask R-CNN's results, and the fastest C++ reimplementation, as reported for
// this task; not measured on this machine.
constexpr double kPycocotoolsSeconds[] = {23.0, 24.0};  // bbox, segm
constexpr double kFastestCppSeconds[] = {6.0, 7.0};

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw vision::CocoError(fmt::format("{}: cannot write", path.string()));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Times COCO bbox/segm evaluation on a synthetic val2017-sized set",
               "dtrain-bench-coco-eval"};
  dtrain::bench::SyntheticCocoSpec spec;
  int threads = 0;
  std::string json_path, keep_dir;
  app.add_option("--images", spec.images, "Images")->default_val(spec.images)->check(CLI::PositiveNumber);
  app.add_option("--categories", spec.categories, "Categories")
      ->default_val(spec.categories)
      ->check(CLI::Range(1, 90));
  app.add_option("--detections-per-image", spec.detections_per_image, "Detections per image")
      ->default_val(spec.detections_per_image)
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", spec.seed, "Generator seed")->default_val(spec.seed);
  app.add_option("--threads", threads, "Evaluation threads (0: one per core)")->default_val(0);
  app.add_option("--json", json_path, "Append one JSON line per IoU type to this file");
  app.add_option("--keep-dir", keep_dir, "Write the generated JSON files here and keep them");
  CLI11_PARSE(app, argc, argv);

  try {
    const int used_threads = concurrency::resolve_thread_count(threads);
    auto start = Clock::now();
    const dtrain::bench::SyntheticCoco data = dtrain::bench::generate_synthetic_coco(spec, used_threads);
    const double generate_s = seconds_since(start);

    std::filesystem::path dir = keep_dir;
    const bool temporary = keep_dir.empty();
    if (temporary) {
      dir = std::filesystem::temp_directory_path() / fmt::format("dtrain-bench-coco-{}", getpid());
    }
    std::filesystem::create_directories(dir);
    const auto gt_path = dir / "instances_synthetic.json";
    const auto box_path = dir / "bbox_results.json";
    const auto mask_path = dir / "segm_results.json";
    write_file(gt_path, data.ground_truth);
    write_file(box_path, data.box_results);
    write_file(mask_path, data.mask_results);
    std::printf("generated %d images, %zu annotations, %zu detections in %.1f s "
                "(gt %.0f MB, bbox results %.0f MB, segm results %.0f MB) in %s\n",
                spec.images, data.annotations, data.detections, generate_s,
                data.ground_truth.size() / 1e6, data.box_results.size() / 1e6,
                data.mask_results.size() / 1e6, dir.string().c_str());
    std::printf("threads: %d (hardware: %d)\n", used_threads, concurrency::resolve_thread_count(0));

    start = Clock::now();
    const auto gt = vision::CocoGroundTruth::load(gt_path.string());
    const double load_gt_s = seconds_since(start);

    FILE* json = json_path.empty() ? nullptr : std::fopen(json_path.c_str(), "a");
    if (!json_path.empty() && json == nullptr) {
      throw vision::CocoError(fmt::format("{}: cannot open for appending", json_path));
    }
    std::printf("\n%-5s %8s %8s %9s %11s %9s %10s %8s  %s\n", "type", "load_gt", "load_dt",
                "evaluate", "accumulate", "eval+acc", "vs pycoco", "AP", "(seconds)");
    for (const vision::IouType type : {vision::IouType::kBbox, vision::IouType::kSegm}) {
      const size_t t = type == vision::IouType::kBbox ? 0 : 1;
      start = Clock::now();
      const auto dt = vision::CocoDetections::load(
          gt, (type == vision::IouType::kBbox ? box_path : mask_path).string(), used_threads);
      const double load_dt_s = seconds_since(start);
      vision::CocoEvaluator evaluator(gt, dt, type, used_threads);
      start = Clock::now();
      evaluator.evaluate();
      const double evaluate_s = seconds_since(start);
      start = Clock::now();
      evaluator.accumulate();
      const double accumulate_s = seconds_since(start);
      const vision::CocoSummary summary = evaluator.summarize();
      const double total = evaluate_s + accumulate_s;
      // The reference figures are for val2017's size; other sizes get no ratio.
      const bool comparable = spec.images == 5000 && spec.categories == 80 &&
                              spec.detections_per_image == 100;
      const double speedup = comparable ? kPycocotoolsSeconds[t] / total : 0;
      const std::string name(vision::iou_type_name(type));
      const std::string ratio = comparable ? fmt::format("{:.1f}x", speedup) : "n/a";
      std::printf("%-5s %8.2f %8.2f %9.2f %11.2f %9.2f %10s %8.4f\n", name.c_str(), load_gt_s,
                  load_dt_s, evaluate_s, accumulate_s, total, ratio.c_str(), summary.stats[0].value);
      if (json) {
        std::fprintf(json,
                     "{\"bench\":\"coco_eval\",\"iou_type\":\"%s\",\"images\":%d,\"categories\":%d,"
                     "\"annotations\":%zu,\"detections\":%zu,\"threads\":%d,\"load_gt_s\":%.4f,"
                     "\"load_dt_s\":%.4f,\"evaluate_s\":%.4f,\"accumulate_s\":%.4f,"
                     "\"evaluate_accumulate_s\":%.4f,\"pycocotools_reference_s\":%.1f,"
                     "\"fastest_cpp_reference_s\":%.1f,\"speedup_vs_pycocotools_reference\":%.2f,"
                     "\"AP\":%.17g,\"reference_measured_here\":false}\n",
                     name.c_str(), spec.images, spec.categories, data.annotations, data.detections,
                     used_threads, load_gt_s, load_dt_s, evaluate_s, accumulate_s, total,
                     kPycocotoolsSeconds[t], kFastestCppSeconds[t], speedup, summary.stats[0].value);
      }
    }
    if (json) std::fclose(json);
    std::printf(
        "\nvs pycoco: pycocotools' evaluate+accumulate on COCO val2017 with a detector's results\n"
        "takes ~%.0f s (bbox) / ~%.0f s (segm); the fastest C++ reimplementation ~%.0f / ~%.0f s.\n"
        "These are reference figures, NOT measured here: pycocotools cannot be installed on this\n"
        "machine (no pip), and this set is synthetic (same size and shape, not the same data).\n",
        kPycocotoolsSeconds[0], kPycocotoolsSeconds[1], kFastestCppSeconds[0], kFastestCppSeconds[1]);
    if (temporary) std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench-coco-eval: %s\n", e.what());
    return 1;
  }
  return 0;
}
