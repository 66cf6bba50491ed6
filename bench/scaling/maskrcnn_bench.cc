// dtrain-bench-maskrcnn-scaling: Mask R-CNN as configs/mask_rcnn_R_18_FPN_cpu_shapes.yaml builds
// it (per-rank BatchNorm), trained data-parallel through dtrain's DistributedOptimizer on the
// synthetic scenes and from the weights that maskrcnn_ddp.py prepares, 2 images per rank.
// Rank 0 prints the images/s of all ranks. bench/scaling/maskrcnn runs it beside PyTorch DDP.
// --lockstep-only trains each rank alone but waits for all at each step's end, which separates
// what synchronous training costs when the ranks' images are unequally heavy from what the
// gradients' exchange costs; --breakdown says where each rank's step went, and how long the
// step's last rank to finish backward still waited (the exchange's tail, or in lockstep the
// barrier's own latency).
//
//   dtrain run -np 2 -- dtrain-bench-maskrcnn-scaling --workdir DIR [--warmup 3] [--steps 20] [--threads 1]
//       [--lockstep-only] [--breakdown]
#include <CLI/CLI.hpp>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <vector>

#include "bench/scaling/timed_steps.h"
#include "dtrain/torch.h"
#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"
#include "vision/torch_save/torch_checkpoint.h"

namespace {

constexpr int kImagesPerRank = 2;

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("dtrain-bench-maskrcnn-scaling: Mask R-CNN (shapes config) training throughput under dtrain run");
  std::string workdir, config_file = DTRAIN_SHAPES_CONFIG;
  int warmup = 3, steps = 20, threads = 1, images_of = -1;
  app.add_option("--workdir", workdir, "Where maskrcnn_ddp.py prepare wrote weights.pth and inputs.pth")->required();
  app.add_option("--config-file", config_file, "The model's config");
  app.add_option("--warmup", warmup, "Steps before the clock starts")->check(CLI::NonNegativeNumber);
  app.add_option("--steps", steps, "Steps timed")->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "LibTorch threads per rank")->check(CLI::PositiveNumber);
  app.add_option("--images-of-rank", images_of, "Train on this rank's images (default: its own)")
      ->check(CLI::NonNegativeNumber);
  bool breakdown = false, lockstep_only = false;
  app.add_flag("--lockstep-only", lockstep_only,
               "Exchange no gradients, only wait for every rank at the end of each step (a barrier): what "
               "synchronous training costs before any communication");
  app.add_flag("--breakdown", breakdown,
               "Also print each rank's mean time in forward+backward, synchronize() and the update");
  CLI11_PARSE(app, argc, argv);

  namespace dt = dtrain::libtorch;
  namespace vision = dtrain::vision;
  dtrain::init();
  dt::set_num_threads(threads);
  dt::retain_freed_memory();
  vision::config::Config config = vision::config::maskrcnn_defaults();
  config.merge_from_file(config_file);
  // Per-rank statistics, as DDP's BatchNorm2d, and float32 as DDP's model (the config trains in
  // bfloat16 on the CPU).
  config.merge_from_list({"MODEL.RESNETS.NORM", "BN", "SOLVER.AMP.ENABLED", "False"});
  vision::modeling::MaskRcnn model(vision::config::to_model_options(config));
  const auto weights = vision::modeling::load_weights(*model, workdir + "/weights.pth");
  if (dtrain::rank() == 0) {
    std::printf("weights: %zu tensors loaded, %zu reinitialised, %zu ignored\n", weights.loaded.size(),
                weights.reinitialized.size(), weights.ignored.size());
  }

  std::map<std::string, at::Tensor> inputs;
  for (auto& entry : vision::torch_save::load_state_dict(workdir + "/inputs.pth")) inputs[entry.name] = entry.tensor;
  std::vector<at::Tensor> images;
  std::vector<vision::DetectionTargets> targets;
  const int owner = images_of >= 0 ? images_of : dtrain::rank();
  for (int i = owner * kImagesPerRank; i < (owner + 1) * kImagesPerRank; ++i) {
    const std::string t = "target" + std::to_string(i) + "_";
    images.push_back(inputs.at("image" + std::to_string(i)));
    targets.push_back({inputs.at(t + "boxes"), inputs.at(t + "labels"), inputs.at(t + "masks")});
  }

  torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  std::optional<dt::DistributedOptimizer> distributed;  // none with --lockstep-only: its hooks would reduce
  if (!lockstep_only) distributed.emplace(sgd, model->named_parameters().pairs());
  model->train();
  using Clock = std::chrono::steady_clock;
  double compute_s = 0, wait_s = 0, update_s = 0;  // over the timed steps
  std::vector<double> waits_s;                     // each timed step's
  int steps_run = 0;
  auto step = [&] {
    if (steps_run++ == warmup) {
      compute_s = wait_s = update_s = 0;
      waits_s.clear();
    }
    const auto t0 = Clock::now();
    distributed ? distributed->zero_grad() : sgd.zero_grad();
    at::Tensor total = at::zeros({});
    for (const auto& [name, loss] : model->losses(images, targets)) total = total + loss;
    total.backward();
    const auto t1 = Clock::now();
    distributed ? distributed->synchronize() : dtrain::barrier();
    const auto t2 = Clock::now();
    distributed ? distributed->step() : static_cast<void>(sgd.step());
    compute_s += std::chrono::duration<double>(t1 - t0).count();
    wait_s += std::chrono::duration<double>(t2 - t1).count();
    waits_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    update_s += std::chrono::duration<double>(Clock::now() - t2).count();
  };
  const double seconds = dtrain::bench::seconds_for_steps(step, warmup, steps);
  if (breakdown) {
    std::printf("rank %d, ms per step: forward+backward %.1f, synchronize %.1f, update %.1f\n", dtrain::rank(),
                1e3 * compute_s / steps, 1e3 * wait_s / steps, 1e3 * update_s / steps);
    std::fflush(stdout);
    // Per step, the shortest wait is the one of the rank that finished backward last.
    auto all =
        dtrain::allgather("breakdown.waits",
                          {waits_s.data(), dtrain::DataType::kFloat64, {1, static_cast<std::int64_t>(waits_s.size())}});
    const auto* by_rank = static_cast<const double*>(all.output().data);
    double tail_s = 0;
    for (std::size_t k = 0; k < waits_s.size(); ++k) {
      double shortest = by_rank[k];
      for (int r = 1; r < dtrain::size(); ++r) shortest = std::min(shortest, by_rank[r * waits_s.size() + k]);
      tail_s += shortest;
    }
    if (dtrain::rank() == 0) {
      std::printf("the rank that finished backward last then waited %.1f ms per step\n", 1e3 * tail_s / steps);
    }
  }
  if (dtrain::rank() == 0) {
    std::printf("maskrcnn-shapes %s ranks=%d steps=%d: %.2f images/s\n", lockstep_only ? "lockstep" : "dtrain",
                dtrain::size(), steps, kImagesPerRank * dtrain::size() * steps / seconds);
  }
  dtrain::shutdown();
  return 0;
}
