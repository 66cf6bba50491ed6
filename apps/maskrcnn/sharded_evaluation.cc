#include "apps/maskrcnn/sharded_evaluation.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "vision/inference/coco_results.h"
#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "vision/inference/model_inference.h"
#include "vision/data/coco_dataset.h"
#include "vision/data/image_codec.h"
#include "vision/evaluation/coco_detections.h"
#include "vision/evaluation/coco_evaluator.h"
#include "vision/evaluation/coco_ground_truth.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;

// This rank's detections of its shard as one COCO results array (category
// ids, not the model's contiguous labels).
std::string detect_shard(vision::modeling::MaskRcnnImpl& model, const vision::CocoDataset& dataset) {
  const std::vector<uint32_t> indices = dataset.all_indices();
  const size_t rank = static_cast<size_t>(dtrain::rank()), size = static_cast<size_t>(dtrain::size());
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (size_t position = rank; position < indices.size(); position += size) {
    const vision::DatasetImage& image = dataset.images()[indices[position]];
    const std::string path = dataset.image_path(image);
    vision::inference::ImageDetections detections;
    try {
      detections = vision::inference::detect_image(model, vision::read_image(path));
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": " + e.what());
    }
    for (vision::inference::DetectedInstance& instance : detections.instances)
      instance.label = dataset.category_id(instance.label);
    for (auto& result : vision::inference::coco_results(detections, image.id)) results.push_back(std::move(result));
  }
  return results.dump();
}

// Every rank's text, in rank order, on every rank.
std::vector<std::string> gather_texts(const std::string& text) {
  const at::Tensor length = torch::tensor({static_cast<int64_t>(text.size())}, torch::kInt64);
  const at::Tensor lengths = libtorch::allgather(length, "eval.result_lengths");
  at::Tensor bytes = torch::empty({static_cast<int64_t>(text.size())}, torch::kUInt8);
  std::memcpy(bytes.data_ptr<uint8_t>(), text.data(), text.size());
  const at::Tensor all = libtorch::allgather(bytes, "eval.results").contiguous();
  std::vector<std::string> texts;
  const char* cursor = reinterpret_cast<const char*>(all.data_ptr<uint8_t>());
  for (int64_t r = 0; r < lengths.size(0); ++r) {
    const int64_t n = lengths[r].item<int64_t>();
    texts.emplace_back(cursor, static_cast<size_t>(n));
    cursor += n;
  }
  return texts;
}

void append_summary(EvaluationScalars& scalars, const vision::CocoSummary& summary, const std::string& type) {
  for (const vision::SummaryStatistic& stat : summary.stats) scalars.emplace_back(type + "/" + stat.name, stat.value);
}

void append_categories(EvaluationScalars& scalars, const vision::CocoSummary& summary, const std::string& type) {
  for (const vision::CategoryAp& category : summary.per_category) {
    scalars.emplace_back(type + "/AP-" + category.name, category.ap);
  }
}

}  // namespace

EvaluationScalars evaluate_on_ranks(vision::modeling::MaskRcnnImpl& model, const EvaluationData& data,
                                    const fs::path& results_path, int64_t iteration) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const vision::CocoDataset dataset = vision::CocoDataset::load(data.annotations, data.images);
  const bool was_training = model.is_training();
  model.eval();
  std::string shard;
  try {
    shard = detect_shard(model, dataset);
  } catch (...) {
    if (was_training) model.train();
    throw;
  }
  if (was_training) model.train();
  const std::vector<std::string> texts = gather_texts(shard);
  if (dtrain::rank() != 0) return {};

  // One results array of every rank's detections in rank order, without a
  // JSON DOM: each text is a compact array, "[]" or "[{...},...,{...}]".
  std::string results = "[";
  for (const std::string& text : texts) {
    if (text.size() <= 2) continue;
    if (results.size() > 1) results += ',';
    results.append(text, 1, text.size() - 2);
  }
  results += ']';
  fs::create_directories(results_path.parent_path());
  {
    std::ofstream out(results_path, std::ios::trunc);
    out << results << "\n";
    if (!out) throw std::runtime_error(results_path.string() + ": cannot write the COCO results");
  }
  const auto evaluation_start = clock::now();
  const double inference_s = std::chrono::duration<double>(evaluation_start - start).count();

  const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const vision::CocoGroundTruth gt = vision::CocoGroundTruth::load(data.annotations);
  const vision::CocoDetections dt = vision::CocoDetections::parse(gt, results, results_path.string(), threads);
  const bool masks = model.options().roi_heads.mask_on;
  EvaluationScalars scalars, per_category;
  std::printf("Evaluation at iteration %lld: %zu images, %zu detections, inference %.1f s on %d rank(s)\n",
              static_cast<long long>(iteration), dataset.all_indices().size(), dt.detections().size(), inference_s,
              dtrain::size());
  for (const vision::IouType type : {vision::IouType::kBbox, vision::IouType::kSegm}) {
    if (type == vision::IouType::kSegm && !masks) continue;
    const std::string name(vision::iou_type_name(type));
    vision::CocoEvaluator evaluator(gt, dt, type, threads);
    evaluator.evaluate();
    evaluator.accumulate();
    const vision::CocoSummary summary = evaluator.summarize();
    std::printf("%s:\n%s", name.c_str(), summary.text().c_str());
    append_summary(scalars, summary, name);
    append_categories(per_category, summary, name);
  }
  std::printf("COCO evaluation on rank 0: %.3f s (ground truth and results loaded, evaluated, accumulated)\n",
              std::chrono::duration<double>(clock::now() - evaluation_start).count());
  std::string line = "eval: iter: " + std::to_string(iteration);
  for (const auto& [name, value] : scalars) {
    if (!name.ends_with("/AP") && !name.ends_with("/AP50") && !name.ends_with("/AP75")) continue;
    char field[64];
    std::snprintf(field, sizeof field, "  %s: %.4f", name.c_str(), value);
    line += field;
  }
  std::printf("%s\nresults: %s\n", line.c_str(), results_path.c_str());
  std::fflush(stdout);
  scalars.insert(scalars.end(), per_category.begin(), per_category.end());
  return scalars;
}

}  // namespace dtrain::maskrcnn
