#include "trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "dtrain/dtrain.h"
#include "dtrain/torch.h"
#include "vision/config/model_options.h"
#include "vision/data/batch_collate.h"
#include "vision/data/coco_dataset.h"
#include "vision/data/data_loader.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"
#include "vision/solver/lr_schedule.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;
namespace modeling = vision::modeling;
using vision::config::Config;

// The job runner's training channel, else the config's paths.
std::pair<std::string, std::string> training_data(const Config& config) {
  std::string annotations = config.get<std::string>("DATASETS.TRAIN_ANNOTATIONS");
  std::string images = config.get<std::string>("DATASETS.TRAIN_IMAGES");
  if (const char* channel = std::getenv("SM_CHANNEL_TRAINING"); channel && annotations.empty()) {
    annotations = (fs::path(channel) / "annotations" / "instances_train.json").string();
    images = (fs::path(channel) / "train").string();
  }
  if (annotations.empty() || images.empty()) {
    throw std::invalid_argument(
        "no training data: set DATASETS.TRAIN_ANNOTATIONS and DATASETS.TRAIN_IMAGES (or run with SM_CHANNEL_TRAINING)");
  }
  return {annotations, images};
}

vision::LoaderOptions loader_options(const Config& config, const modeling::MaskRcnnOptions& model, int64_t per_rank,
                                     uint64_t seed) {
  vision::LoaderOptions o;
  o.batch_size = static_cast<size_t>(per_rank);
  o.workers = static_cast<int>(config.get<int64_t>("DATALOADER.NUM_WORKERS"));
  o.seed = seed;
  o.rank = dtrain::rank();
  o.world_size = dtrain::size();
  o.group_by_aspect_ratio = config.get<bool>("DATALOADER.ASPECT_RATIO_GROUPING");
  o.drop_last = true;  // every rank takes the same number of steps per epoch
  o.transforms.min_sizes.assign(model.transform.min_size_train.begin(), model.transform.min_size_train.end());
  o.transforms.max_size = static_cast<int>(model.transform.max_size_train);
  for (int c = 0; c < 3; ++c) {
    o.transforms.mean[c] = static_cast<float>(model.transform.pixel_mean[c]);
    o.transforms.std[c] = static_cast<float>(model.transform.pixel_std[c]);
  }
  return o;
}

vision::solver::LrScheduleOptions schedule_options(const Config& config) {
  vision::solver::LrScheduleOptions o;
  o.base_lr = config.get<double>("SOLVER.BASE_LR");
  o.steps = config.get<std::vector<int64_t>>("SOLVER.STEPS");
  o.gamma = config.get<double>("SOLVER.GAMMA");
  o.warmup_iters = config.get<int64_t>("SOLVER.WARMUP_ITERS");
  o.warmup_factor = config.get<double>("SOLVER.WARMUP_FACTOR");
  return o;
}

std::string checkpoint_name(int64_t iteration) {
  char name[32];
  std::snprintf(name, sizeof name, "model_%07lld.pth", static_cast<long long>(iteration));
  return name;
}

}  // namespace

void train(const Config& config, const TrainerSettings& settings) {
  dtrain::init();
  const int rank = dtrain::rank(), size = dtrain::size();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  libtorch::set_num_threads(settings.threads > 0 ? settings.threads : std::max(1, cores / dtrain::local_size()));
  libtorch::retain_freed_memory();

  const modeling::MaskRcnnOptions options = vision::config::to_model_options(config);
  const int64_t global_batch = config.get<int64_t>("SOLVER.IMS_PER_BATCH");
  if (global_batch < size || global_batch % size != 0) {
    throw std::invalid_argument("SOLVER.IMS_PER_BATCH " + std::to_string(global_batch) +
                                " must be a positive multiple of the number of ranks (" + std::to_string(size) + ")");
  }
  const int64_t per_rank = global_batch / size;
  const int64_t max_iter = config.get<int64_t>("SOLVER.MAX_ITER");
  const int64_t log_period = std::max<int64_t>(1, config.get<int64_t>("SOLVER.LOG_PERIOD"));
  const int64_t checkpoint_period = config.get<int64_t>("SOLVER.CHECKPOINT_PERIOD");
  const int64_t seed_setting = config.get<int64_t>("SEED");
  const uint64_t seed = seed_setting >= 0 ? static_cast<uint64_t>(seed_setting) : 0;
  const vision::solver::WarmupMultiStepSchedule schedule(schedule_options(config));
  const fs::path output_dir = config.get<std::string>("OUTPUT_DIR");

  auto [annotations, images] = training_data(config);
  const vision::CocoDataset dataset = vision::CocoDataset::load(annotations, images);
  if (static_cast<int64_t>(dataset.num_classes()) + 1 != options.roi_heads.num_classes) {
    throw std::invalid_argument(annotations + ": " + std::to_string(dataset.num_classes()) +
                                " categories, but MODEL.ROI_HEADS.NUM_CLASSES is " +
                                std::to_string(options.roi_heads.num_classes) + " (categories + background)");
  }
  vision::DataLoader loader(dataset, loader_options(config, options, per_rank, seed));

  // The same initialisation everywhere; rank 0's weights are broadcast anyway.
  torch::manual_seed(seed);
  modeling::MaskRcnn model(options);
  if (const std::string weights = config.get<std::string>("MODEL.WEIGHTS"); !weights.empty()) {
    modeling::load_weights(*model, weights);
  }
  model->train();
  libtorch::broadcast_parameters(libtorch::named_state(*model), 0);
  // Each rank its own stream for the anchor and proposal samples.
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed * 1000003 + static_cast<uint64_t>(rank));

  libtorch::NamedTensors trainable;
  std::vector<at::Tensor> parameters;
  for (const auto& item : model->named_parameters()) {
    if (!item.value().requires_grad()) continue;
    trainable.emplace_back(item.key(), item.value());
    parameters.push_back(item.value());
  }
  torch::optim::SGD sgd(parameters, torch::optim::SGDOptions(schedule.lr(0))
                                        .momentum(config.get<double>("SOLVER.MOMENTUM"))
                                        .weight_decay(config.get<double>("SOLVER.WEIGHT_DECAY")));
  libtorch::DistributedOptimizer optimizer(sgd, trainable);

  if (rank == 0) {
    fs::create_directories(output_dir);
    std::printf("Training Mask R-CNN on %d rank(s): %lld images per step (%lld per rank), %lld iterations, %zu images\n",
                size, static_cast<long long>(global_batch), static_cast<long long>(per_rank),
                static_cast<long long>(max_iter), loader.items().size());
    std::fflush(stdout);
  }
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto window_start = start;
  uint64_t epoch = 0;
  loader.start_epoch(epoch);
  for (int64_t iteration = 0; iteration < max_iter; ++iteration) {
    std::optional<vision::SampleBatch> batch = loader.next();
    if (!batch) {
      loader.start_epoch(++epoch);
      batch = loader.next();
      if (!batch) throw std::runtime_error(annotations + ": not enough training images for one batch per rank");
    }
    const vision::TensorBatch tensors = vision::collate_batch(batch->samples, options.transform.size_divisible);
    modeling::ImageBatch images_in{tensors.images, {}};
    std::vector<vision::DetectionTargets> targets;
    for (size_t i = 0; i < tensors.targets.size(); ++i) {
      images_in.image_sizes.push_back(tensors.image_sizes[i]);
      targets.push_back({tensors.targets[i].boxes, tensors.targets[i].labels, tensors.targets[i].masks});
    }
    const double lr = schedule.lr(iteration);
    for (auto& group : sgd.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);

    modeling::LossDict losses = model->batch_losses(images_in, targets, generator);
    at::Tensor total = at::zeros({});
    for (const auto& [name, value] : losses) total = total + value;
    optimizer.zero_grad();
    total.backward();
    optimizer.step();

    const int64_t done = iteration + 1;
    const bool log_now = done % log_period == 0 || done == max_iter;
    if (log_now) {
      // Losses averaged over the ranks: the numbers describe the global batch.
      std::string line = "iter: " + std::to_string(done) + "/" + std::to_string(max_iter);
      double total_average = 0;
      for (const auto& [name, value] : losses) {
        const double average = libtorch::metric_average(value.item<double>(), "log." + name);
        total_average += average;
        char field[64];
        std::snprintf(field, sizeof field, "  %s: %.4f", name.c_str(), average);
        line += field;
      }
      const auto now = clock::now();
      const double window = std::chrono::duration<double>(now - window_start).count();
      const double elapsed = std::chrono::duration<double>(now - start).count();
      const int64_t steps_in_window = (done % log_period == 0) ? log_period : done % log_period;
      char tail[160];
      std::snprintf(tail, sizeof tail, "  total_loss: %.4f  lr: %.6g  images/s: %.2f  eta: %.0f s", total_average, lr,
                    static_cast<double>(steps_in_window * global_batch) / window,
                    elapsed / static_cast<double>(done) * static_cast<double>(max_iter - done));
      window_start = now;
      if (rank == 0) {
        std::printf("%s%s\n", line.c_str(), tail);
        std::fflush(stdout);
      }
    }
    if (rank == 0 && checkpoint_period > 0 && done % checkpoint_period == 0 && done != max_iter) {
      modeling::save_weights(*model, (output_dir / checkpoint_name(done)).string());
    }
  }
  if (rank == 0) {
    const fs::path final_path = output_dir / "model_final.pth";
    modeling::save_weights(*model, final_path.string());
    std::printf("Trained %lld iterations in %.1f s; model: %s\n", static_cast<long long>(max_iter),
                std::chrono::duration<double>(clock::now() - start).count(), final_path.c_str());
    std::fflush(stdout);
  }
  dtrain::shutdown();
}

}  // namespace dtrain::maskrcnn
