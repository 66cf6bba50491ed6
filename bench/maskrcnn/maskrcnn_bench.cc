// dtrain-bench-maskrcnn: Mask R-CNN R50-FPN training step and inference time and peak
// memory, dtrain against torchvision measured in the same run on the same weights and images
// (torchvision_step.py writes them). Each side runs in a process of its own, once per round,
// the sides' order turning every round; a process measures every configuration (images per
// step x precision) asked for. On the CPU or a GPU (--device cuda, in a build against a
// LibTorch with CUDA), in float32 or mixed precision, both sides set up alike. Reported per
// configuration: the median over rounds of each round's median step, the rounds' spread, and
// dtrain's images/s over torchvision's. --profile-dir also writes each side's profiler trace
// of a few steps (bench/maskrcnn/step_profile.py reads them).
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#if DTRAIN_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "dtrain/torch.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"
#include "vision/solver/loss_scaler.h"
#include "vision/solver/multi_tensor_sgd.h"
#include "vision/torch_save/torch_checkpoint.h"

namespace {

namespace fs = std::filesystem;
using dtrain::vision::DetectionTargets;
namespace modeling = dtrain::vision::modeling;
using nlohmann::json;

// One batch size and precision to measure.
struct Config {
  int images = 2;
  std::string amp = "off";  // or float16, bfloat16
};

// A side: "torchvision" or "dtrain", with variant flags after colons ("dtrain:channels_last").
struct Side {
  std::string name;  // as given, the label in the report
  bool torchvision = false;
  bool channels_last = false;
  bool per_tensor_sgd = false;  // dtrain: LibTorch's torch::optim::SGD instead of MultiTensorSgd
};

Side parse_side(const std::string& text) {
  Side side{text};
  std::stringstream parts(text);
  std::string part;
  std::getline(parts, part, ':');
  if (part != "torchvision" && part != "dtrain") throw CLI::ValidationError("--sides", "unknown side '" + part + "'");
  side.torchvision = part == "torchvision";
  while (std::getline(parts, part, ':')) {
    if (part == "channels_last") {
      side.channels_last = true;
    } else if (part == "per_tensor_sgd" && !side.torchvision) {
      side.per_tensor_sgd = true;
    } else {
      throw CLI::ValidationError("--sides", "'" + text + "': unknown variant '" + part + "'");
    }
  }
  return side;
}

std::vector<Config> parse_configs(const std::vector<int>& images, const std::vector<std::string>& amps) {
  std::vector<Config> configs;
  for (int n : images) {
    for (const std::string& amp : amps) configs.push_back({n, amp});
  }
  return configs;
}

// "2:off,4:bfloat16", as --configs takes it.
std::vector<Config> parse_configs(const std::string& text) {
  std::vector<Config> configs;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto colon = item.find(':');
    const std::string amp = colon == std::string::npos ? "" : item.substr(colon + 1);
    int images = 0;
    try {
      images = std::stoi(item.substr(0, colon));
    } catch (const std::exception&) {}
    if (images < 1 || images > 8 || (amp != "off" && amp != "float16" && amp != "bfloat16")) {
      throw CLI::ValidationError("--configs", "'" + item + "' is not IMAGES:off|float16|bfloat16 with 1 to 8 images");
    }
    configs.push_back({images, amp});
  }
  return configs;
}

std::string configs_flag(const std::vector<Config>& configs) {
  std::string text;
  for (const Config& c : configs) text += (text.empty() ? "" : ",") + std::to_string(c.images) + ":" + c.amp;
  return text;
}

// What every side is asked to run.
struct Setup {
  int threads = 2;
  int steps = 3;
  int warmup = 1;
  double score_threshold = 0.05;
  std::string device = "cpu";
  int min_size = 512;
  std::vector<Config> configs;
  std::string torchvision_amp;  // empty: each configuration's own
  std::string profile_dir;

  int max_images() const {
    int n = 0;
    for (const Config& c : configs) n = std::max(n, c.images);
    return n;
  }

  // The flags of a side's process (torchvision_step.py takes the same names; dtrain's side
  // reads its variants from --side).
  std::string flags(const Side& side) const {
    std::vector<Config> asked = configs;
    if (side.torchvision && !torchvision_amp.empty()) {
      for (Config& c : asked) c.amp = torchvision_amp;
    }
    return " --threads " + std::to_string(threads) + " --steps " + std::to_string(steps) + " --warmup " +
           std::to_string(warmup) + " --score-threshold " + std::to_string(score_threshold) + " --device " + device +
           " --min-size " + std::to_string(min_size) + " --configs " + configs_flag(asked) +
           (side.torchvision && side.channels_last ? " --channels-last" : "") +
           (profile_dir.empty() ? "" : " --profile-dir " + profile_dir);
  }
};

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// Times on a GPU need the queued work finished; peak memory is what the caching allocator
// handed out (torch.cuda.max_memory_allocated on the other side).
void synchronize(const at::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

void reset_peak_gpu_memory(const at::Device& device) {
#if DTRAIN_TORCH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
  (void)device;
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

// LibTorch's profiler (Kineto) around `steps` calls of `step`, its trace written to `path`.
template <typename Step>
void profile(const at::Device& device, const std::string& path, int steps, Step&& step) {
  using namespace torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  try {
    prepareProfiler(config, activities);
    enableProfiler(config, activities);
    for (int i = 0; i < steps; ++i) step();
    disableProfiler()->save(path);
  } catch (const c10::Error& e) {  // Debian's LibTorch has no Kineto: saying so in one line
    throw std::runtime_error("--profile-dir: LibTorch's profiler: " + std::string(e.what_without_backtrace()));
  }
}

// dtrain's side: the same model torchvision_step.py builds (R50-FPN, frozen batch norm, three
// trainable stages, short side `min_size`), one model per precision, trained and timed like
// torchvision's.
class DtrainRunner {
 public:
  DtrainRunner(const std::string& workdir, const Setup& setup, const Side& side)
      : workdir_(workdir),
        setup_(setup),
        side_(side),
        device_(setup.device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU)) {
    for (auto& entry : dtrain::vision::torch_save::load_state_dict(workdir + "/inputs.pth")) {
      inputs_[entry.name] = entry.tensor;
    }
  }

  json measure(const Config& config) {
    modeling::MaskRcnnOptions options;
    options.transform.min_size_train = {setup_.min_size};
    options.transform.min_size_test = setup_.min_size;
    options.roi_heads.score_thresh = setup_.score_threshold;
    options.compute.mixed_precision = mixed_precision(config.amp);
    options.compute.channels_last = side_.channels_last;
    modeling::MaskRcnn model(options);
    modeling::load_weights(*model, workdir_ + "/weights.pth");
    model->to(device_);
    // The images on the device; the targets where dtrain's trainer keeps them, on the host
    // (the model checks them there and copies them over within the timed step).
    std::vector<at::Tensor> images;
    std::vector<DetectionTargets> targets;
    for (int i = 0; i < config.images; ++i) {
      const std::string p = "target" + std::to_string(i) + "_";
      const auto image = inputs_.find("image" + std::to_string(i));
      if (image == inputs_.end()) {
        throw std::runtime_error("the inputs hold fewer than " + std::to_string(config.images) + " images");
      }
      images.push_back(image->second.to(device_));
      targets.push_back({inputs_.at(p + "boxes"), inputs_.at(p + "labels"), inputs_.at(p + "masks")});
    }
    std::vector<at::Tensor> trainable;
    for (const auto& p : model->parameters()) {
      if (p.requires_grad()) trainable.push_back(p);
    }
    const auto sgd_options = torch::optim::SGDOptions(1e-4).momentum(0.9);
    std::unique_ptr<torch::optim::SGD> sgd =
        side_.per_tensor_sgd ? std::make_unique<torch::optim::SGD>(trainable, sgd_options)
                             : std::make_unique<dtrain::vision::solver::MultiTensorSgd>(trainable, sgd_options);
    std::optional<dtrain::vision::solver::LossScaler> scaler;
    if (config.amp == "float16") scaler.emplace();
    int skipped_steps = 0;  // float16: steps whose gradients were not finite, not applied

    const auto train_step = [&] {
      RECORD_USER_SCOPE("bench.step");
      at::Tensor total;
      {
        RECORD_USER_SCOPE("bench.forward");
        modeling::LossDict losses = model->losses(images, targets);
        total = at::zeros({}, losses.begin()->second.options());
        for (const auto& [name, value] : losses) total = total + value;
      }
      {
        RECORD_USER_SCOPE("bench.backward");
        sgd->zero_grad();
        (scaler ? scaler->scale_loss(total) : total).backward();
      }
      {
        RECORD_USER_SCOPE("bench.optimizer");
        const bool finite = !scaler || scaler->unscale_gradients(trainable);  // one host sync, as GradScaler's step
        if (scaler) scaler->update(finite);
        if (!finite) ++skipped_steps;
        if (finite) sgd->step();
      }
      synchronize(device_);
    };
    model->train();
    for (int i = 0; i < setup_.warmup; ++i) train_step();
    reset_peak_gpu_memory(device_);
    skipped_steps = 0;
    std::vector<double> train_times;
    for (int i = 0; i < setup_.steps; ++i) train_times.push_back(timed(train_step));
    const double peak_gpu = peak_gpu_mb(device_);
    const int skipped_timed_steps = skipped_steps;
    if (!setup_.profile_dir.empty()) {
      profile(device_,
              setup_.profile_dir + "/" + side_file_name() + "_" + std::to_string(config.images) + "_" + config.amp +
                  ".json",
              3, train_step);
    }

    model->eval();
    torch::NoGradGuard no_grad;
    std::vector<int64_t> counts;
    const auto inference = [&] {
      counts.clear();
      for (const auto& d : model->detect(images)) counts.push_back(d.boxes.size(0));
      synchronize(device_);
    };
    inference();
    std::vector<double> inference_times;
    for (int i = 0; i < setup_.steps; ++i) inference_times.push_back(timed(inference));
    return {{"images", config.images},     {"amp", config.amp},
            {"train_step_s", train_times}, {"inference_s", inference_times},
            {"peak_gpu_mb", peak_gpu},     {"peak_rss_mb", peak_rss_mb()},
            {"detections", counts},        {"skipped_steps", skipped_timed_steps}};
  }

 private:
  template <typename Work>
  double timed(Work&& work) {
    synchronize(device_);
    const auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  std::string side_file_name() const {
    std::string name = side_.name;
    std::replace(name.begin(), name.end(), ':', '-');
    return name;
  }

  std::string workdir_;
  const Setup& setup_;
  Side side_;
  at::Device device_;
  std::map<std::string, at::Tensor> inputs_;
};

// Runs a command; every output line that is a JSON object, parsed.
std::vector<json> run_json_lines(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) throw std::runtime_error("failed (status " + std::to_string(status) + "): " + command);
  std::vector<json> lines;
  std::stringstream stream(output);
  std::string line;
  while (std::getline(stream, line)) {
    if (!line.empty() && line.front() == '{') lines.push_back(json::parse(line));
  }
  return lines;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// One side's results for one configuration over the rounds: each round's median step.
struct Rounds {
  std::vector<double> train, inference;
  double peak_gpu_mb = 0, peak_rss_mb = 0;
  json detections;
  int skipped_steps = 0, timed_steps = 0;  // over the rounds: float16's steps left out by loss scaling

  void add(const json& measured) {
    train.push_back(median(measured["train_step_s"].get<std::vector<double>>()));
    inference.push_back(median(measured["inference_s"].get<std::vector<double>>()));
    peak_gpu_mb = std::max(peak_gpu_mb, measured["peak_gpu_mb"].get<double>());
    peak_rss_mb = std::max(peak_rss_mb, measured["peak_rss_mb"].get<double>());
    detections = measured["detections"];
    skipped_steps += measured.value("skipped_steps", 0);
    timed_steps += static_cast<int>(measured["train_step_s"].size());
  }

  json summary() const {
    return {{"train_step_s", median(train)},   {"train_step_s_rounds", train},   {"inference_s", median(inference)},
            {"inference_s_rounds", inference}, {"peak_gpu_mb", peak_gpu_mb},     {"peak_rss_mb", peak_rss_mb},
            {"detections", detections},        {"skipped_steps", skipped_steps}, {"timed_steps", timed_steps}};
  }
};

std::string spread(const std::vector<double>& values, double scale, const char* format) {
  const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  char text[64];
  std::snprintf(text, sizeof text, format, *lo * scale, *hi * scale);
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Mask R-CNN R50-FPN: dtrain vs torchvision, training step and inference on images of 480x640"};
  Setup setup;
  std::vector<int> images{2};
  std::vector<std::string> amps{"off"};
  std::vector<std::string> side_names{"torchvision", "dtrain"};
  int rounds = 3;
  std::string json_path;
  bool json_line = false;
  std::string child_workdir, child_side = "dtrain";
  app.add_option("--threads", setup.threads, "intra-op threads for both")->capture_default_str();
  app.add_option("--steps", setup.steps, "timed steps per configuration and round (their median is the round's)")
      ->capture_default_str();
  app.add_option("--warmup", setup.warmup, "untimed steps before them")->capture_default_str();
  app.add_option("--rounds", rounds, "every side once per round, in an order that turns each round")
      ->capture_default_str();
  app.add_option("--score-threshold", setup.score_threshold,
                 "box score threshold; 0 runs the mask head on 100 detections per image")
      ->capture_default_str();
  app.add_option("--device", setup.device, "cpu, or cuda (cuda:0; needs a LibTorch with CUDA)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--images", images, "images per step (1 to 8), one or more: 2,4,8")
      ->delimiter(',')
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  app.add_option("--min-size", setup.min_size, "the images' short side after resizing (COCO's: 800)")
      ->check(CLI::Range(32, 1333))
      ->capture_default_str();
  app.add_option("--amp", amps, "mixed precision, one or more: off, float16 (GPU, loss scaling), bfloat16")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "float16", "bfloat16"}))
      ->capture_default_str();
  std::string configs_text;
  app.add_option("--configs", configs_text, "instead of --images and --amp: a list such as 2:off,4:bfloat16");
  app.add_option("--torchvision-amp", setup.torchvision_amp,
                 "torchvision's mixed precision when it must differ (torchvision 0.14 cannot autocast on the CPU: "
                 "its NMS has no bfloat16 kernel there)")
      ->check(CLI::IsMember({"off", "float16", "bfloat16"}));
  app.add_option("--sides", side_names,
                 "what to measure: torchvision and dtrain, each optionally with :channels_last (images and "
                 "convolutions in NHWC; dtrain's RoI heads stay NCHW), dtrain also with :per_tensor_sgd "
                 "(LibTorch's SGD, one update per parameter)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--profile-dir", setup.profile_dir,
                 "also profile 3 steps of each configuration and side (LibTorch's profiler, with Kineto) into this "
                 "folder; bench/maskrcnn/step_profile.py summarises them");
  app.add_option("--json", json_path, "write the results as JSON to this file");
  app.add_flag("--json-line", json_line, "print the results as one JSON line last");
  app.add_option("--dtrain-only", child_workdir, "internal: measure dtrain on the files in this directory");
  app.add_option("--side", child_side, "internal: the dtrain side --dtrain-only measures");
  CLI11_PARSE(app, argc, argv);
  try {
    setup.configs = configs_text.empty() ? parse_configs(images, amps) : parse_configs(configs_text);
    std::vector<Side> sides;
    for (const std::string& name : side_names) sides.push_back(parse_side(name));
    if (!child_workdir.empty()) {
      DtrainRunner runner(child_workdir, setup, parse_side(child_side));
      for (const Config& config : setup.configs) std::cout << runner.measure(config).dump() << std::endl;
      return 0;
    }
    if (!setup.profile_dir.empty()) {
      fs::create_directories(setup.profile_dir);
      setup.profile_dir = fs::absolute(setup.profile_dir).string();
    }

    char pattern[] = "/tmp/dtrain-bench-maskrcnn-XXXXXX";
    const std::string workdir = mkdtemp(pattern);
    const std::string python = std::string(DTRAIN_PYTHON) + " -B " + DTRAIN_TORCHVISION_STEP + " " + workdir;
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    run_json_lines(python + " --prepare --images " + std::to_string(setup.max_images()) + " --min-size " +
                   std::to_string(setup.min_size));
    // results[side][configuration index]
    std::vector<std::vector<Rounds>> results(sides.size(), std::vector<Rounds>(setup.configs.size()));
    for (int round = 0; round < rounds; ++round) {
      // The profile is taken once, in the first round, so that it does not slow the others.
      Setup this_round = setup;
      if (round > 0) this_round.profile_dir.clear();
      for (size_t k = 0; k < sides.size(); ++k) {
        const size_t s = (k + static_cast<size_t>(round)) % sides.size();
        const Side& side = sides[s];
        const std::string command =
            side.torchvision ? python + this_round.flags(side)
                             : self + " --dtrain-only " + workdir + " --side " + side.name + this_round.flags(side);
        const std::vector<json> measured = run_json_lines(command);
        if (measured.size() != setup.configs.size()) {
          throw std::runtime_error(side.name + " reported " + std::to_string(measured.size()) + " of " +
                                   std::to_string(setup.configs.size()) + " configurations");
        }
        for (size_t c = 0; c < measured.size(); ++c) results[s][c].add(measured[c]);
        std::fprintf(stderr, "round %d/%d: %s done\n", round + 1, rounds, side.name.c_str());
      }
    }
    for (const char* file : {"weights.pth", "inputs.pth"}) fs::remove(fs::path(workdir) / file);
    fs::remove(workdir);

    // The first side is the reference every other side's images/s is divided by.
    json report = {{"threads", setup.threads},
                   {"steps", setup.steps},
                   {"warmup", setup.warmup},
                   {"rounds", rounds},
                   {"device", setup.device},
                   {"min_size", setup.min_size},
                   {"score_threshold", setup.score_threshold},
                   {"torchvision_amp", setup.torchvision_amp},
                   {"reference", sides.front().name},
                   {"configs", json::array()}};
    std::printf(
        "Mask R-CNN R50-FPN, images 480x640 -> %d px, %s, %d threads, median of %d steps per round, %d "
        "rounds (sides' order turning); ratio: images/s over %s's, median [min, max] of the rounds\n",
        setup.min_size, setup.device.c_str(), setup.threads, setup.steps, rounds, sides.front().name.c_str());
    std::printf("%-6s %-9s %-28s %16s %18s %20s %12s %8s %14s\n", "images", "amp", "side", "train step ms",
                "train ratio", "inference ms", "peak MB", "skipped", "detections");
    for (size_t c = 0; c < setup.configs.size(); ++c) {
      const Config& config = setup.configs[c];
      json entry = {{"images", config.images}, {"amp", config.amp}, {"sides", json::object()}};
      const Rounds& reference = results[0][c];
      for (size_t s = 0; s < sides.size(); ++s) {
        const Rounds& r = results[s][c];
        json summary = r.summary();
        std::vector<double> ratios;
        for (size_t i = 0; i < r.train.size(); ++i) ratios.push_back(reference.train[i] / r.train[i]);
        summary["train_images_per_s"] = config.images / median(r.train);
        summary["train_ratio"] = median(ratios);
        summary["train_ratio_rounds"] = ratios;
        entry["sides"][sides[s].name] = summary;
        const double peak = setup.device == "cuda" ? r.peak_gpu_mb : r.peak_rss_mb;
        const std::string skipped = std::to_string(r.skipped_steps) + "/" + std::to_string(r.timed_steps);
        std::printf(
            "%-6d %-9s %-28s %7.1f %-8s %5.2f %-12s %7.1f %-12s %12.0f %8s %14s\n", config.images, config.amp.c_str(),
            sides[s].name.c_str(), median(r.train) * 1e3, spread(r.train, 1e3, "[%.1f,%.1f]").c_str(), median(ratios),
            spread(ratios, 1, "[%.2f,%.2f]").c_str(), median(r.inference) * 1e3,
            spread(r.inference, 1e3, "[%.1f,%.1f]").c_str(), peak, skipped.c_str(), r.detections.dump().c_str());
      }
      report["configs"].push_back(entry);
    }
    if (!json_path.empty()) std::ofstream(json_path) << report.dump(1) << "\n";
    if (json_line) std::cout << report.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dtrain-bench-maskrcnn: " << e.what() << std::endl;
    return 1;
  }
}
