// dtrain-bench-maskrcnn: Mask R-CNN R50-FPN training step and inference
// time and peak memory, dtrain against torchvision measured in the same run
// on the same weights and images (torchvision_step.py writes them), each in
// a fresh process so that peak memory is each one's own.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>

#include "dtrain/torch.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"

namespace {

namespace fs = std::filesystem;
using dtrain::vision::DetectionTargets;
namespace modeling = dtrain::vision::modeling;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// The same model torchvision_step.py builds: R50-FPN, frozen batch norm,
// three trainable stages, short side 512.
nlohmann::json measure_dtrain(const std::string& workdir, int threads, int steps, double score_threshold) {
  dtrain::libtorch::set_num_threads(threads);
  dtrain::libtorch::retain_freed_memory();
  modeling::MaskRcnnOptions options;
  options.transform.min_size_train = {512};
  options.transform.min_size_test = 512;
  options.roi_heads.score_thresh = score_threshold;
  modeling::MaskRcnn model(options);
  modeling::load_weights(*model, workdir + "/weights.pth");
  std::map<std::string, at::Tensor> inputs;
  for (auto& entry : dtrain::vision::torch_save::load_state_dict(workdir + "/inputs.pth")) {
    inputs[entry.name] = entry.tensor;
  }
  std::vector<at::Tensor> images{inputs["image0"], inputs["image1"]};
  std::vector<DetectionTargets> targets;
  for (int i = 0; i < 2; ++i) {
    const std::string p = "target" + std::to_string(i) + "_";
    targets.push_back({inputs[p + "boxes"], inputs[p + "labels"], inputs[p + "masks"]});
  }
  std::vector<at::Tensor> trainable;
  for (const auto& p : model->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  torch::optim::SGD sgd(trainable, torch::optim::SGDOptions(1e-4).momentum(0.9));
  using clock = std::chrono::steady_clock;
  model->train();
  std::vector<double> train_times;
  for (int step = 0; step <= steps; ++step) {
    const auto start = clock::now();
    modeling::LossDict losses = model->losses(images, targets);
    at::Tensor total = at::zeros({});
    for (const auto& [name, value] : losses) total = total + value;
    sgd.zero_grad();
    total.backward();
    sgd.step();
    if (step > 0) train_times.push_back(std::chrono::duration<double>(clock::now() - start).count());
  }
  model->eval();
  std::vector<double> inference_times;
  std::vector<int64_t> counts;
  {
    torch::NoGradGuard no_grad;
    for (int step = 0; step <= steps; ++step) {
      const auto start = clock::now();
      const auto detections = model->detect(images);
      if (step > 0) inference_times.push_back(std::chrono::duration<double>(clock::now() - start).count());
      counts = {detections[0].boxes.size(0), detections[1].boxes.size(0)};
    }
  }
  return {{"train_step_s", *std::min_element(train_times.begin(), train_times.end())},
          {"inference_s", *std::min_element(inference_times.begin(), inference_times.end())},
          {"peak_rss_mb", peak_rss_mb()},
          {"detections", counts}};
}

// The smallest times and the largest peak memory seen over rounds.
void keep_best(nlohmann::json& best, const nlohmann::json& round) {
  if (best.is_null()) {
    best = round;
    return;
  }
  for (const char* key : {"train_step_s", "inference_s"}) {
    best[key] = std::min(best[key].get<double>(), round[key].get<double>());
  }
  best["peak_rss_mb"] = std::max(best["peak_rss_mb"].get<double>(), round["peak_rss_mb"].get<double>());
}

// Runs a command and parses the last line of its output as JSON.
nlohmann::json run_json(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) throw std::runtime_error("failed (status " + std::to_string(status) + "): " + command);
  const auto end = output.find_last_not_of('\n');
  const auto begin = output.rfind('\n', end);
  return nlohmann::json::parse(output.substr(begin == std::string::npos ? 0 : begin + 1));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Mask R-CNN R50-FPN: dtrain vs torchvision, training step and inference on 2 images of 480x640"};
  int threads = 2, steps = 3, rounds = 1;
  double score_threshold = 0.05;
  bool json = false;
  std::string child_workdir;
  app.add_option("--threads", threads, "intra-op threads for both")->capture_default_str();
  app.add_option("--steps", steps,
                 "timed steps after one warm-up step (the fastest is reported: the least disturbed by other load)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "torchvision then dtrain, this many times; the best of each is kept")
      ->capture_default_str();
  app.add_option("--score-threshold", score_threshold,
                 "box score threshold; 0 runs the mask head on 100 detections per image")
      ->capture_default_str();
  app.add_flag("--json", json, "print one JSON line");
  app.add_option("--dtrain-only", child_workdir, "internal: measure dtrain on the files in this directory");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!child_workdir.empty()) {
      std::cout << measure_dtrain(child_workdir, threads, steps, score_threshold).dump() << std::endl;
      return 0;
    }
    nlohmann::json theirs, ours;
    for (int round = 0; round < rounds; ++round) {
      char pattern[] = "/tmp/dtrain-bench-maskrcnn-XXXXXX";
      const std::string workdir = mkdtemp(pattern);
      const std::string common = " " + std::to_string(threads) + " " + std::to_string(steps) + " " +
                                 std::to_string(score_threshold);
      const nlohmann::json t = run_json("/usr/bin/python3 -B " DTRAIN_TORCHVISION_STEP " " + workdir + common);
      const std::string self = fs::read_symlink("/proc/self/exe").string();
      const nlohmann::json d =
          run_json(self + " --dtrain-only " + workdir + " --threads " + std::to_string(threads) + " --steps " +
                   std::to_string(steps) + " --score-threshold " + std::to_string(score_threshold));
      fs::remove_all(workdir);
      keep_best(theirs, t);
      keep_best(ours, d);
    }
    if (json) {
      std::cout << nlohmann::json{{"threads", threads},
                                  {"steps", steps},
                                  {"rounds", rounds},
                                  {"score_threshold", score_threshold},
                                  {"torchvision", theirs}, {"dtrain", ours}}
                       .dump()
                << std::endl;
      return 0;
    }
    std::printf("Mask R-CNN R50-FPN, 2 images 480x640 -> 512 px, %d threads, fastest of %d steps x %d rounds, "
                "score threshold %g\n",
                threads, steps, rounds, score_threshold);
    std::printf("detections per image: torchvision %s, dtrain %s\n", theirs["detections"].dump().c_str(),
                ours["detections"].dump().c_str());
    std::printf("%-22s %12s %12s %16s\n", "", "torchvision", "dtrain", "dtrain/torchvision");
    for (const char* key : {"train_step_s", "inference_s", "peak_rss_mb"}) {
      const double t = theirs[key].get<double>(), d = ours[key].get<double>();
      std::printf("%-22s %12.3f %12.3f %16.2f\n", key, t, d, d / t);
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dtrain-bench-maskrcnn: " << e.what() << std::endl;
    return 1;
  }
}
