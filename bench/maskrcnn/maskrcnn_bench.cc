// dtrain-bench-maskrcnn: Mask R-CNN R50-FPN training step and inference
// time and peak memory, dtrain against torchvision measured in the same run
// on the same weights and images (torchvision_step.py writes them), each in
// a fresh process so that peak memory is each one's own. On the CPU or a GPU
// (--device cuda, in a build against a LibTorch with CUDA), in float32 or
// mixed precision (--amp), both sides set up alike.
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
#include <optional>
#include <string>

#if DTRAIN_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "dtrain/torch.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"
#include "vision/solver/loss_scaler.h"

namespace {

namespace fs = std::filesystem;
using dtrain::vision::DetectionTargets;
namespace modeling = dtrain::vision::modeling;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// What both sides are asked to run.
struct Setup {
  int threads = 2;
  int steps = 3;
  double score_threshold = 0.05;
  std::string device = "cpu";
  int images = 2;
  int min_size = 512;
  std::string amp = "off";  // or float16, bfloat16
  std::string torchvision_amp;  // empty: amp
  bool channels_last = false;

  // The flags for this program's --dtrain-only, or (torchvision) for torchvision_step.py.
  std::string flags(bool torchvision = false) const {
    const std::string side_amp = torchvision && !torchvision_amp.empty() ? torchvision_amp : amp;
    return " --threads " + std::to_string(threads) + " --steps " + std::to_string(steps) + " --score-threshold " +
           std::to_string(score_threshold) + " --device " + device + " --images " + std::to_string(images) +
           " --min-size " + std::to_string(min_size) + " --amp " + side_amp + (channels_last ? " --channels-last" : "");
  }
};

// Times on a GPU need the queued work finished; peak memory is what the caching allocator
// handed out (torch.cuda.max_memory_allocated on the other side).
void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

double peak_gpu_mb(const at::Device& device) {
#if DTRAIN_TORCH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return static_cast<double>(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);  // [0]: all pools
  }
#endif
  (void)device;
  return 0;
}

modeling::MixedPrecision mixed_precision(const std::string& amp) {
  if (amp == "float16") return modeling::MixedPrecision::kFloat16;
  if (amp == "bfloat16") return modeling::MixedPrecision::kBFloat16;
  return modeling::MixedPrecision::kOff;
}

// The same model torchvision_step.py builds: R50-FPN, frozen batch norm,
// three trainable stages, short side `min_size`.
nlohmann::json measure_dtrain(const std::string& workdir, const Setup& setup) {
  dtrain::libtorch::set_num_threads(setup.threads);
  const at::Device device(setup.device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU));
  if (device.is_cpu()) dtrain::libtorch::retain_freed_memory();
  modeling::MaskRcnnOptions options;
  options.transform.min_size_train = {setup.min_size};
  options.transform.min_size_test = setup.min_size;
  options.roi_heads.score_thresh = setup.score_threshold;
  options.compute.mixed_precision = mixed_precision(setup.amp);
  options.compute.channels_last = setup.channels_last;
  modeling::MaskRcnn model(options);
  modeling::load_weights(*model, workdir + "/weights.pth");
  model->to(device);
  std::map<std::string, at::Tensor> inputs;
  for (auto& entry : dtrain::vision::torch_save::load_state_dict(workdir + "/inputs.pth")) {
    inputs[entry.name] = entry.tensor;
  }
  // The images on the device; the targets where dtrain's trainer keeps them, on the host (the
  // model checks them there and copies them over within the timed step).
  std::vector<at::Tensor> images;
  std::vector<DetectionTargets> targets;
  for (int i = 0; i < setup.images; ++i) {
    const std::string p = "target" + std::to_string(i) + "_";
    images.push_back(inputs["image" + std::to_string(i)].to(device));
    targets.push_back({inputs[p + "boxes"], inputs[p + "labels"], inputs[p + "masks"]});
  }
  std::vector<at::Tensor> trainable;
  for (const auto& p : model->parameters()) {
    if (p.requires_grad()) trainable.push_back(p);
  }
  torch::optim::SGD sgd(trainable, torch::optim::SGDOptions(1e-4).momentum(0.9));
  std::optional<dtrain::vision::solver::LossScaler> scaler;
  if (setup.amp == "float16") scaler.emplace();
  using clock = std::chrono::steady_clock;
  model->train();
  std::vector<double> train_times;
  for (int step = 0; step <= setup.steps; ++step) {
    synchronize(device);
    const auto start = clock::now();
    modeling::LossDict losses = model->losses(images, targets);
    at::Tensor total = at::zeros({}, losses.begin()->second.options());
    for (const auto& [name, value] : losses) total = total + value;
    sgd.zero_grad();
    (scaler ? scaler->scale_loss(total) : total).backward();
    const bool finite = !scaler || scaler->unscale_gradients(trainable);  // one host sync, as GradScaler's step
    if (scaler) scaler->update(finite);
    if (finite) sgd.step();
    synchronize(device);
    if (step > 0) train_times.push_back(std::chrono::duration<double>(clock::now() - start).count());
  }
  const double peak_gpu = peak_gpu_mb(device);
  model->eval();
  std::vector<double> inference_times;
  std::vector<int64_t> counts;
  {
    torch::NoGradGuard no_grad;
    for (int step = 0; step <= setup.steps; ++step) {
      synchronize(device);
      const auto start = clock::now();
      const auto detections = model->detect(images);
      synchronize(device);
      if (step > 0) inference_times.push_back(std::chrono::duration<double>(clock::now() - start).count());
      counts.clear();
      for (const auto& d : detections) counts.push_back(d.boxes.size(0));
    }
  }
  return {{"train_step_s", *std::min_element(train_times.begin(), train_times.end())},
          {"inference_s", *std::min_element(inference_times.begin(), inference_times.end())},
          {"peak_rss_mb", peak_rss_mb()},
          {"peak_gpu_mb", peak_gpu},
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
  for (const char* key : {"peak_rss_mb", "peak_gpu_mb"}) {
    best[key] = std::max(best[key].get<double>(), round[key].get<double>());
  }
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
  CLI::App app{"Mask R-CNN R50-FPN: dtrain vs torchvision, training step and inference on images of 480x640"};
  Setup setup;
  int rounds = 1;
  bool json = false;
  std::string child_workdir;
  app.add_option("--threads", setup.threads, "intra-op threads for both")->capture_default_str();
  app.add_option("--steps", setup.steps,
                 "timed steps after one warm-up step (the fastest is reported: the least disturbed by other load)")
      ->capture_default_str();
  app.add_option("--rounds", rounds, "torchvision then dtrain, this many times; the best of each is kept")
      ->capture_default_str();
  app.add_option("--score-threshold", setup.score_threshold,
                 "box score threshold; 0 runs the mask head on 100 detections per image")
      ->capture_default_str();
  app.add_option("--device", setup.device, "cpu, or cuda (cuda:0; needs a LibTorch with CUDA)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--images", setup.images, "images per step (1 to 8)")->check(CLI::Range(1, 8))->capture_default_str();
  app.add_option("--min-size", setup.min_size, "the images' short side after resizing (COCO's: 800)")
      ->check(CLI::Range(32, 1333))
      ->capture_default_str();
  app.add_option("--amp", setup.amp, "mixed precision: off, float16 (GPU, loss scaling) or bfloat16")
      ->check(CLI::IsMember({"off", "float16", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--torchvision-amp", setup.torchvision_amp,
                 "torchvision's mixed precision when it must differ (default: --amp's; torchvision 0.14 cannot "
                 "autocast on the CPU: its NMS has no bfloat16 kernel there)")
      ->check(CLI::IsMember({"off", "float16", "bfloat16"}));
  app.add_flag("--channels-last", setup.channels_last,
               "images and convolution weights in NHWC (torchvision: every convolution; dtrain: the backbone and "
               "the RPN, the RoI heads taking RoIAlign's NCHW output)");
  app.add_flag("--json", json, "print one JSON line");
  app.add_option("--dtrain-only", child_workdir, "internal: measure dtrain on the files in this directory");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!child_workdir.empty()) {
      std::cout << measure_dtrain(child_workdir, setup).dump() << std::endl;
      return 0;
    }
    nlohmann::json theirs, ours;
    for (int round = 0; round < rounds; ++round) {
      char pattern[] = "/tmp/dtrain-bench-maskrcnn-XXXXXX";
      const std::string workdir = mkdtemp(pattern);
      const nlohmann::json t = run_json(std::string(DTRAIN_PYTHON) + " -B " + DTRAIN_TORCHVISION_STEP + " " + workdir +
                                        setup.flags(/*torchvision=*/true));
      const std::string self = fs::read_symlink("/proc/self/exe").string();
      const nlohmann::json d = run_json(self + " --dtrain-only " + workdir + setup.flags());
      for (const char* file : {"weights.pth", "inputs.pth"}) fs::remove(fs::path(workdir) / file);
      fs::remove(workdir);
      keep_best(theirs, t);
      keep_best(ours, d);
    }
    if (json) {
      std::cout << nlohmann::json{{"threads", setup.threads},
                                  {"steps", setup.steps},
                                  {"rounds", rounds},
                                  {"score_threshold", setup.score_threshold},
                                  {"device", setup.device},
                                  {"images", setup.images},
                                  {"min_size", setup.min_size},
                                  {"amp", setup.amp},
                                  {"torchvision_amp", setup.torchvision_amp.empty() ? setup.amp : setup.torchvision_amp},
                                  {"channels_last", setup.channels_last},
                                  {"torchvision", theirs},
                                  {"dtrain", ours}}
                       .dump()
                << std::endl;
      return 0;
    }
    std::printf("Mask R-CNN R50-FPN, %d images 480x640 -> %d px, %s, amp %s (torchvision %s)%s, %d threads, fastest "
                "of %d steps x %d rounds, score threshold %g\n",
                setup.images, setup.min_size, setup.device.c_str(), setup.amp.c_str(),
                (setup.torchvision_amp.empty() ? setup.amp : setup.torchvision_amp).c_str(),
                setup.channels_last ? ", channels last" : "", setup.threads, setup.steps, rounds,
                setup.score_threshold);
    std::printf("detections per image: torchvision %s, dtrain %s\n", theirs["detections"].dump().c_str(),
                ours["detections"].dump().c_str());
    std::printf("%-22s %12s %12s %16s\n", "", "torchvision", "dtrain", "dtrain/torchvision");
    const auto row = [](const char* name, double t, double d) {
      std::printf("%-22s %12.3f %12.3f %16.2f\n", name, t, d, d / t);
    };
    for (const char* key : {"train_step_s", "inference_s"}) row(key, theirs[key].get<double>(), ours[key].get<double>());
    const double n = setup.images;
    row("train_images_per_s", n / theirs["train_step_s"].get<double>(), n / ours["train_step_s"].get<double>());
    row("inference_images_per_s", n / theirs["inference_s"].get<double>(), n / ours["inference_s"].get<double>());
    const char* memory = setup.device == "cuda" ? "peak_gpu_mb" : "peak_rss_mb";
    row(memory, theirs[memory].get<double>(), ours[memory].get<double>());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dtrain-bench-maskrcnn: " << e.what() << std::endl;
    return 1;
  }
}
