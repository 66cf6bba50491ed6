#include "apps/maskrcnn/trainer.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "dtrain/dtrain.h"
#include "dtrain/elastic.h"
#include "dtrain/torch.h"
#include "apps/maskrcnn/batch_feeder.h"
#include "apps/maskrcnn/model_export.h"
#include "apps/maskrcnn/sharded_evaluation.h"
#include "apps/maskrcnn/training_checkpoint.h"
#include "apps/maskrcnn/training_distribution.h"
#include "apps/maskrcnn/training_hooks.h"
#include "apps/maskrcnn/training_run.h"
#include "vision/inference/model_inference.h"
#include "vision/config/model_options.h"
#include "vision/data/batch_collate.h"
#include "vision/data/coco_dataset.h"
#include "vision/data/data_loader.h"
#include "vision/data/transforms.h"
#include "vision/modeling/autocast.h"
#include "vision/modeling/batch_norm.h"
#include "vision/modeling/mask_rcnn.h"
#include "vision/modeling/model_weights.h"
#include "vision/solver/loss_scaler.h"
#include "vision/solver/lr_schedule.h"
#include "vision/solver/multi_tensor_sgd.h"
#include "training/gradient_step.h"
#include "training/trainer.h"

namespace dtrain::maskrcnn {
namespace {

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

// The job runner's channels win over the config's paths: in a job the data
// is where the channel put it. A channel holds a dataset root as
// `dtrain data make-shapes` writes it (annotations/instances_<split>.json and
// <split>/); the validation channel, when given, holds the val split.
EvaluationData dataset_paths(const Config& config, const std::string& split) {
  const bool train = split == "train";
  EvaluationData paths{config.get<std::string>(train ? "DATASETS.TRAIN_ANNOTATIONS" : "DATASETS.TEST_ANNOTATIONS"),
                       config.get<std::string>(train ? "DATASETS.TRAIN_IMAGES" : "DATASETS.TEST_IMAGES")};
  const char* channel = train ? environment("SM_CHANNEL_TRAINING") : environment("SM_CHANNEL_VALIDATION");
  if (!channel && !train) channel = environment("SM_CHANNEL_TRAINING");
  if (channel) {
    paths.annotations = (fs::path(channel) / "annotations" / ("instances_" + split + ".json")).string();
    paths.images = (fs::path(channel) / split).string();
  }
  return paths;
}

// Detectron2's auto_scale_workers: the solver keys are written for
// REFERENCE_WORLD_SIZE ranks; on `size` ranks keep the images per rank and
// the epochs, scaling the learning rate linearly with the global batch.
void scale_to_world(Config& config, int size) {
  const int64_t reference = config.get<int64_t>("SOLVER.REFERENCE_WORLD_SIZE");
  if (reference <= 0 || reference == size) return;
  const double scale = static_cast<double>(size) / static_cast<double>(reference);
  const int64_t batch = config.get<int64_t>("SOLVER.IMS_PER_BATCH");
  const double scaled_batch = static_cast<double>(batch) * scale;
  if (std::abs(scaled_batch - std::round(scaled_batch)) > 1e-9) {
    throw std::invalid_argument("SOLVER.REFERENCE_WORLD_SIZE " + std::to_string(reference) + ": IMS_PER_BATCH " +
                                std::to_string(batch) + " cannot be scaled to " + std::to_string(size) +
                                " ranks (not a whole number of images)");
  }
  const auto iterations = [&](int64_t n) { return static_cast<int64_t>(std::llround(static_cast<double>(n) / scale)); };
  config.set("SOLVER.IMS_PER_BATCH", static_cast<int64_t>(std::llround(scaled_batch)));
  config.set("SOLVER.BASE_LR", config.get<double>("SOLVER.BASE_LR") * scale);
  config.set("SOLVER.MAX_ITER", iterations(config.get<int64_t>("SOLVER.MAX_ITER")));
  config.set("SOLVER.WARMUP_ITERS", iterations(config.get<int64_t>("SOLVER.WARMUP_ITERS")));
  config.set("SOLVER.CHECKPOINT_PERIOD", iterations(config.get<int64_t>("SOLVER.CHECKPOINT_PERIOD")));
  config.set("TEST.EVAL_PERIOD", iterations(config.get<int64_t>("TEST.EVAL_PERIOD")));
  std::vector<int64_t> steps = config.get<std::vector<int64_t>>("SOLVER.STEPS");
  for (int64_t& step : steps) step = iterations(step);
  config.set("SOLVER.STEPS", steps);
  config.set("SOLVER.REFERENCE_WORLD_SIZE", int64_t{size});
}

// One seed for the whole job: SEED, or when negative one the distribution draws alike on
// every rank.
uint64_t shared_seed(int64_t setting, TrainingDistribution& distribution) {
  if (setting >= 0) return static_cast<uint64_t>(setting);
  return distribution.draw_seed();
}

// In a job (SM_MODEL_DIR set) the host's /opt/ml/checkpoints, which the job
// runner syncs, unless OUTPUT_DIR was given on the command line.
fs::path output_directory(const Config& config, const TrainerSettings& settings) {
  if (const char* model_dir = environment("SM_MODEL_DIR"); model_dir && !settings.output_dir_given) {
    return fs::path(model_dir).parent_path() / "checkpoints";
  }
  return config.get<std::string>("OUTPUT_DIR");
}

vision::LoaderOptions loader_options(const Config& config, const modeling::MaskRcnnOptions& model, int64_t per_rank,
                                     uint64_t seed, const dtrain::Placement& placement) {
  vision::LoaderOptions o;
  o.batch_size = static_cast<size_t>(per_rank);
  o.workers = static_cast<int>(config.get<int64_t>("DATALOADER.NUM_WORKERS"));
  o.seed = seed;
  o.rank = placement.rank;
  o.world_size = placement.size;
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
  o.decay = vision::solver::parse_lr_decay(config.get<std::string>("SOLVER.LR_SCHEDULER_NAME"));
  o.max_iter = config.get<int64_t>("SOLVER.MAX_ITER");
  o.base_lr_end = config.get<double>("SOLVER.BASE_LR_END");
  return o;
}

// Each image's anchor and proposal samples come from its own generator,
// seeded by the job's seed, the iteration and the image, so they do not
// depend on the rank count or the batch split (and a resumed run draws what
// the uninterrupted one would have).
vision::ops::ImageGenerators image_generators(const std::vector<uint32_t>& dataset_indices, uint64_t seed,
                                              int64_t iteration) {
  std::vector<at::Generator> generators;
  for (const uint32_t index : dataset_indices) {
    generators.push_back(at::make_generator<at::CPUGeneratorImpl>(
        vision::mix_seed(seed, static_cast<uint64_t>(iteration), 0x52504e00ull + index)));
  }
  return vision::ops::ImageGenerators(std::move(generators));
}

// torchvision averages each loss over the samples of the rank's batch (the
// positive proposals for loss_mask, whose count varies). Rescaling by
// local count x ranks / global count makes the averaged gradient that of
// the loss over the global batch: R ranks with b images step exactly as one
// rank with R x b. On one rank every factor is 1.
void normalize_over_ranks(modeling::LossDict& losses, const modeling::LossCounts& counts) {
  const int size = dtrain::size();
  if (size == 1) return;
  std::vector<double> local;
  for (const auto& [name, loss] : losses) local.push_back(static_cast<double>(counts.at(name)));
  const at::Tensor global =
      libtorch::allreduce(torch::tensor(local, torch::kFloat64), "trainer.loss_counts", {ReduceOp::kSum});
  size_t i = 0;
  for (auto& [name, loss] : losses) {
    const double total = global[static_cast<int64_t>(i)].item<double>();
    if (total > 0) loss = loss * (local[i] * static_cast<double>(size) / total);
    ++i;
  }
}

// MODEL.RESNETS.NORM SyncBN: every BatchNorm takes its training statistics
// over all ranks' images through a differentiable allreduce named after the
// module, so 2 ranks x b images normalise as 1 rank x 2b does.
void synchronize_batch_norm(modeling::MaskRcnnImpl& model) {
  for (const auto& item : model.named_modules()) {
    if (auto* norm = dynamic_cast<modeling::BatchNormImpl*>(item.value().get())) {
      norm->synchronize_statistics([name = "sync_batch_norm." + item.key()](const at::Tensor& local) {
        return libtorch::allreduce_with_gradient(local, name);
      });
    }
  }
}

at::ScalarType compute_type(const Config& config) {
  const auto precision = config.get<std::string>("MODEL.PRECISION");
  if (precision == "float32") return at::kFloat;
  if (precision == "float64") return at::kDouble;
  throw std::invalid_argument("MODEL.PRECISION must be float32 or float64, got '" + precision + "'");
}

// MODEL.DEVICE: the CPU, or this rank's GPU (cuda:local_rank, made current).
at::Device model_device(const Config& config) {
  const auto device = config.get<std::string>("MODEL.DEVICE");
  if (device == "cpu") return at::kCPU;
  if (device != "cuda") throw std::invalid_argument("MODEL.DEVICE must be cpu or cuda, got '" + device + "'");
  const at::Device gpu = libtorch::pin_device();
  if (!gpu.is_cuda()) {
    throw std::invalid_argument(
        "MODEL.DEVICE cuda, but LibTorch sees no CUDA device (a LibTorch built without CUDA, "
        "such as Debian's, never does)");
  }
  // PyTorch's defaults (TF32 in cuDNN's convolutions, not in matrix products) unless the
  // config asks for float32 throughout, as torch.backends.cudnn.allow_tf32 = False does.
  if (!config.get<bool>("MODEL.ALLOW_TF32")) {
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  return gpu;
}

// Before hours of training, not after them.
void check_exists(const EvaluationData& data, const std::string& keys) {
  if (!has_data(data)) return;
  for (const std::string& path : {data.annotations, data.images}) {
    std::error_code error;
    if (!fs::exists(path, error)) {
      throw std::invalid_argument(keys + ": " + path + " does not exist (set both keys to \"\" to go without)");
    }
  }
}

// ---- the phases of train(), in order ----

// LibTorch's threads: --threads, or the host's cores shared among its ranks.
void use_cores(int threads, const dtrain::Placement& placement) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  libtorch::set_num_threads(threads > 0 ? threads : std::max(1, cores / placement.local_size));
  libtorch::retain_freed_memory();
}

StepPlan step_plan(const Config& config, int size) {
  const int64_t global_batch = config.get<int64_t>("SOLVER.IMS_PER_BATCH");
  if (global_batch < size || global_batch % size != 0) {
    throw std::invalid_argument("SOLVER.IMS_PER_BATCH " + std::to_string(global_batch) +
                                " must be a positive multiple of the number of ranks (" + std::to_string(size) + ")");
  }
  return {global_batch,
          global_batch / size,
          config.get<int64_t>("SOLVER.MAX_ITER"),
          std::max<int64_t>(1, config.get<int64_t>("SOLVER.LOG_PERIOD")),
          config.get<int64_t>("SOLVER.CHECKPOINT_PERIOD"),
          config.get<int64_t>("TEST.EVAL_PERIOD")};
}

// The evaluation set, checked before hours of training.
EvaluationData test_data_of(const Config& config) {
  EvaluationData data = dataset_paths(config, "val");
  check_exists(data, "DATASETS.TEST_ANNOTATIONS/TEST_IMAGES");
  return data;
}

// Rank 0's metrics.json and TensorBoard events in the output directory; an inactive log elsewhere.
TrainingLog open_log(int rank, const fs::path& output_dir) {
  if (rank != 0) return TrainingLog();
  fs::create_directories(output_dir);
  return TrainingLog(output_dir);
}

modeling::MaskRcnn build_model(const Config& config, const TrainingRun& run) {
  // The same initialisation everywhere; rank 0's weights are broadcast anyway.
  torch::manual_seed(run.seed);
  modeling::MaskRcnn model(run.options);
  model->to(compute_type(config));
  model->to(model_device(config));
  // On one rank SyncBN is BatchNorm: skip 40 no-op allreduces per step. (Parameter-server
  // workers each have a runtime of their own: their BatchNorm statistics stay local.) An
  // elastic job's model is built before its first world and may outlive many: synchronised.
  if (run.options.backbone.synchronized_batch_norm && (run.elastic || dtrain::size() > 1)) {
    synchronize_batch_norm(*model);
  }
  return model;
}

libtorch::NamedTensors trainable_parameters(modeling::MaskRcnnImpl& model) {
  libtorch::NamedTensors trainable;
  for (const auto& item : model.named_parameters()) {
    if (item.value().requires_grad()) trainable.emplace_back(item.key(), item.value());
  }
  return trainable;
}

std::vector<at::Tensor> tensors_of(const libtorch::NamedTensors& named) {
  std::vector<at::Tensor> tensors;
  for (const auto& [name, tensor] : named) tensors.push_back(tensor);
  return tensors;
}

// float16 training scales its loss (SOLVER.AMP.DTYPE float16); bfloat16 and float32 do not.
std::optional<vision::solver::LossScaler> loss_scaler(const TrainingRun& run) {
  if (run.options.compute.mixed_precision != modeling::MixedPrecision::kFloat16) return std::nullopt;
  return vision::solver::LossScaler();
}

}  // namespace

// ---- the structs and functions of training_run.h ----

TrainingRun::TrainingRun(const Config& config, const TrainerSettings& settings, const dtrain::Placement& where,
                         TrainingDistribution& distribution)
    : placement(where),
      options(vision::config::to_model_options(config)),
      steps(step_plan(config, where.size)),
      seed(shared_seed(config.get<int64_t>("SEED"), distribution)),
      schedule(schedule_options(config)),
      clipper(config),
      exchange(exchange_options(config, clipper.enabled())),
      output_dir(output_directory(config, settings)),
      test_data(test_data_of(config)),
      log(open_log(where.rank, output_dir)),
      elastic(config.get<bool>("SOLVER.ELASTIC.ENABLED")) {}

TrainableModel::TrainableModel(const Config& config, const TrainingRun& run)
    : model(build_model(config, run)),
      trainable(trainable_parameters(*model)),
      parameters(tensors_of(trainable)),
      sgd(parameters, torch::optim::SGDOptions(run.schedule.lr(0))
                          .momentum(config.get<double>("SOLVER.MOMENTUM"))
                          .weight_decay(config.get<double>("SOLVER.WEIGHT_DECAY"))),
      scaler(loss_scaler(run)) {}

bool has_data(const EvaluationData& data) { return !data.annotations.empty() && !data.images.empty(); }

// With ordinary BatchNorm every rank keeps running statistics of its own
// images. Before the model is evaluated or saved they are averaged over the
// ranks (one allreduce of all of them), so every rank evaluates, and the
// checkpoint holds, one model that has seen the whole global batch. Frozen
// statistics are equal everywhere and stay so.
void average_batch_norm_statistics(modeling::MaskRcnnImpl& model) {
  if (dtrain::size() == 1) return;
  std::vector<at::Tensor> statistics;
  for (const auto& item : model.named_buffers()) {
    const std::string& name = item.key();
    if (name.ends_with("running_mean") || name.ends_with("running_var")) statistics.push_back(item.value());
  }
  if (statistics.empty()) return;
  std::vector<at::Tensor> flat;
  for (const at::Tensor& s : statistics) flat.push_back(s.reshape(-1));
  const at::Tensor averaged = libtorch::allreduce(at::cat(flat), "trainer.batch_norm_statistics");
  int64_t offset = 0;
  torch::NoGradGuard no_grad;
  for (at::Tensor& s : statistics) {
    s.copy_(averaged.slice(0, offset, offset + s.numel()).view_as(s));
    offset += s.numel();
  }
}

// Every rank evaluates its shard; rank 0 logs the AP.
void evaluate(modeling::MaskRcnnImpl& model, const EvaluationData& data, const fs::path& output_dir, int64_t iteration,
              TrainingLog& log) {
  const Scalars scalars =
      evaluate_on_ranks(model, data, output_dir / "inference" / "coco_instances_results.json", iteration);
  log.write(iteration, "eval", scalars);
}

namespace {

// Every rank must scale alike (the averaged gradients are unscaled by each rank's own
// scale): rank 0's scale, restored from a checkpoint or kept through a world change, goes to all.
void share_loss_scale(TrainableModel& m) {
  if (!m.scaler || dtrain::size() == 1) return;
  std::ostringstream mine;
  mine << std::setprecision(17) << m.scaler->scale() << ' ' << m.scaler->good_steps();  // the exact double
  std::istringstream rank0(
      libtorch::broadcast_bytes(dtrain::rank() == 0 ? mine.str() : std::string(), 0, "trainer.loss_scale"));
  double scale = 0;
  int64_t good_steps = 0;
  rank0 >> scale >> good_steps;
  m.scaler->restore(scale, good_steps);
}

// Where to start: the last checkpoint (--resume), else MODEL.WEIGHTS. Rank 0 reads the files;
// the broadcasts below hand them to the others, which on other hosts need not see OUTPUT_DIR
// at all. Returns the iteration to start at.
int64_t restore(TrainableModel& m, const Config& config, const TrainerSettings& settings, const TrainingRun& run) {
  const int rank = run.placement.rank;
  int64_t start_iter = 0;
  std::string started_from;
  if (rank == 0) {
    const std::optional<fs::path> last = settings.resume ? last_checkpoint(run.output_dir) : std::nullopt;
    if (last) {
      start_iter = load_training_checkpoint(*last, *m.model, m.sgd, m.trainable, m.scaler ? &*m.scaler : nullptr);
      started_from = last->string();
    } else if (const std::string weights = config.get<std::string>("MODEL.WEIGHTS"); !weights.empty()) {
      const modeling::WeightsReport report = modeling::load_weights(*m.model, weights);
      started_from = weights + " (" + std::to_string(report.loaded.size()) + " tensors)";
    }
  }
  libtorch::broadcast_parameters(libtorch::named_state(*m.model), 0);
  start_iter = std::stoll(libtorch::broadcast_bytes(std::to_string(start_iter), 0, "trainer.start_iter"));
  if (start_iter > 0) libtorch::broadcast_optimizer_state(m.sgd, 0);
  share_loss_scale(m);
  if (rank == 0 && !started_from.empty()) {
    std::printf("Starting from %s at iteration %lld\n", started_from.c_str(), static_cast<long long>(start_iter));
  }
  return start_iter;
}

// dtrain-maskrcnn eval: the restored model on the evaluation set.
void evaluate_only(TrainableModel& m, TrainingRun& run, int64_t iteration) {
  if (!has_data(run.test_data)) {
    throw std::invalid_argument("no evaluation data: set DATASETS.TEST_ANNOTATIONS and DATASETS.TEST_IMAGES");
  }
  evaluate(*m.model, run.test_data, run.output_dir, iteration, run.log);
  dtrain::shutdown();
}

struct TrainingSet {
  EvaluationData paths;
  vision::CocoDataset dataset;
};

// The training set, checked against the model's classes.
TrainingSet load_training_set(const Config& config, const modeling::MaskRcnnOptions& options) {
  EvaluationData paths = dataset_paths(config, "train");
  if (!has_data(paths)) {
    throw std::invalid_argument(
        "no training data: set DATASETS.TRAIN_ANNOTATIONS and DATASETS.TRAIN_IMAGES (or run with SM_CHANNEL_TRAINING)");
  }
  check_exists(paths, "DATASETS.TRAIN_ANNOTATIONS/TRAIN_IMAGES");
  vision::CocoDataset dataset = vision::CocoDataset::load(paths.annotations, paths.images);
  if (static_cast<int64_t>(dataset.num_classes()) + 1 != options.roi_heads.num_classes) {
    throw std::invalid_argument(paths.annotations + ": " + std::to_string(dataset.num_classes()) +
                                " categories, but MODEL.ROI_HEADS.NUM_CLASSES is " +
                                std::to_string(options.roi_heads.num_classes) + " (categories + background)");
  }
  return {std::move(paths), std::move(dataset)};
}

void announce_training(const TrainingRun& run, size_t images, const at::Device& device) {
  if (run.placement.rank != 0) return;
  std::printf(
      "Training Mask R-CNN on %d rank(s): %lld images per step (%lld per rank), %lld iterations, "
      "%zu images, seed %llu, output %s\n",
      run.placement.size, static_cast<long long>(run.steps.global_batch), static_cast<long long>(run.steps.per_rank),
      static_cast<long long>(run.steps.max_iter), images, static_cast<unsigned long long>(run.seed),
      run.output_dir.c_str());
  std::fflush(stdout);
  if (run.options.compute.mixed_precision == modeling::MixedPrecision::kBFloat16 && device.is_cpu() &&
      !modeling::cpu_computes_bfloat16()) {
    std::fprintf(stderr,
                 "dtrain-maskrcnn train: warning: SOLVER.AMP bfloat16 on a CPU without AVX512-BF16 or AMX: LibTorch "
                 "emulates bfloat16 here (without AVX-512 in scalar code: 13x slower than float32, measured); "
                 "SOLVER.AMP.ENABLED False trains in float32\n");
  }
}

// This rank's batches from the loader, on the model's device.
FeederOptions feeder_options(const vision::DataLoader& loader, const TrainingRun& run, int64_t start_iter,
                             const std::string& annotations, const at::Device& device) {
  FeederOptions o;
  o.start_iteration = start_iter;
  o.batches_per_epoch =
      loader.items().size() / static_cast<size_t>(run.placement.size) / static_cast<size_t>(run.steps.per_rank);
  o.size_divisible = run.options.transform.size_divisible;
  o.device = device;
  o.annotations = annotations;
  return o;
}

// One iteration (the learning rate is set by its hook): this rank's losses (rescaled for the
// global batch), then the engine's step for the precision: float16's scales the loss and
// drops a step whose gradients overflowed (every rank alike: they see the same averaged
// gradients). The averaged gradients are clipped before the update. Returns the losses.
modeling::LossDict train_step(TrainableModel& m, const TrainingRun& run, GradientExchange& exchange,
                              DivergenceWatch& watch, ModelInputs inputs, int64_t iteration) {
  modeling::LossCounts counts;
  modeling::LossDict losses =
      m.model->batch_losses(std::move(inputs.images), std::move(inputs.targets),
                            image_generators(inputs.dataset_indices, run.seed, iteration), &counts);
  normalize_over_ranks(losses, counts);
  at::Tensor total = at::zeros({}, m.parameters.front().options());
  for (const auto& [name, value] : losses) total = total + value;
  watch.observe(losses, total, iteration);
  const auto clip = [&] { run.clipper.clip(m.parameters); };
  if (m.scaler) {
    training::float16_step(total, exchange, *m.scaler, m.parameters, clip);
  } else {
    training::float32_step(total, exchange, clip);
  }
  return losses;
}

// What the ranks are told when the loss diverged.
constexpr const char* kDivergenceAdvice = "lower SOLVER.BASE_LR or enable SOLVER.CLIP_GRADIENTS";

// Rank 0: model_final.pth and, in a job, the model artifact `dtrain serve` loads.
void save_final_model(TrainableModel& m, const Config& config, const TrainingRun& run,
                      const vision::CocoDataset& dataset, int64_t start_iter, Clock::time_point started) {
  const int64_t max_iter = run.steps.max_iter;
  save_training_checkpoint(run.output_dir, "model_final.pth", *m.model, m.sgd, m.trainable, max_iter, m.loss_scale());
  std::printf("Trained iterations %lld..%lld in %.1f s; model: %s\n", static_cast<long long>(start_iter),
              static_cast<long long>(max_iter), std::chrono::duration<double>(Clock::now() - started).count(),
              (run.output_dir / "model_final.pth").c_str());
  if (const char* model_dir = environment("SM_MODEL_DIR")) {
    fs::create_directories(model_dir);
    fs::copy_file(run.output_dir / "model_final.pth", fs::path(model_dir) / "model_final.pth",
                  fs::copy_options::overwrite_existing);
    write_model_metadata(model_dir, "model_final.pth", config, dataset.categories());
    std::printf("Model artifact: %s (with model.json and config.yaml for dtrain serve)\n",
                (fs::path(model_dir) / "model_final.pth").c_str());
  }
  std::fflush(stdout);
}

// The final model: saved by rank 0, evaluated, and the runtime shut down.
void finish_training(TrainableModel& m, const Config& config, TrainingRun& run, const vision::CocoDataset& dataset,
                     int64_t start_iter, Clock::time_point started) {
  const int rank = run.placement.rank;
  average_batch_norm_statistics(*m.model);
  if (rank == 0) save_final_model(m, config, run, dataset, start_iter, started);
  if (has_data(run.test_data)) {
    evaluate(*m.model, run.test_data, run.output_dir, run.steps.max_iter, run.log);
  } else if (rank == 0) {
    std::printf("No evaluation set (DATASETS.TEST_ANNOTATIONS, DATASETS.TEST_IMAGES): skipping evaluation\n");
  }
  if (rank == 0 && run.log.active()) {
    std::printf("Metrics: %s/metrics.json; TensorBoard: %s\n", run.output_dir.c_str(), run.log.events_path().c_str());
  }
  std::fflush(stdout);
  dtrain::shutdown();
}

// ---- SOLVER.ELASTIC: an elastic job ----

dtrain::Placement current_placement() {
  return {dtrain::rank(),       dtrain::size(),       dtrain::local_rank(),
          dtrain::local_size(), dtrain::cross_rank(), dtrain::cross_size()};
}

// One seed for every world of the job, new workers included: SEED, or else drawn from the
// job's id, which the launcher gives every worker alike.
void fix_elastic_seed(Config& config) {
  if (config.get<int64_t>("SEED") >= 0) return;
  const char* job = environment("DTRAIN_JOB_ID");
  config.set("SEED", static_cast<int64_t>(std::hash<std::string>{}(job ? job : "dtrain") & 0x7fffffff));
}

// The loop of train() inside dtrain::elastic::run. The global batch and the schedule stay as
// configured whatever the world's size: R ranks x IMS_PER_BATCH / R images step as one rank
// with all of them (losses normalised over the global batch, samples drawn per image), and
// without aspect-ratio grouping the global batch of an iteration is the same images in any
// world. So a reset changes who computes, not what: the state to keep is the model, SGD's
// momentum and the iteration.
void train_elastic(Config config, const TrainerSettings& settings) {
  if (settings.distribution != "allreduce" || settings.eval_only || settings.resume) {
    throw std::invalid_argument(
        "SOLVER.ELASTIC.ENABLED trains from MODEL.WEIGHTS through allreduce (not with --distribution ps, --eval-only "
        "or --resume)");
  }
  if (config.get<int64_t>("SOLVER.REFERENCE_WORLD_SIZE") > 0) {
    throw std::invalid_argument(
        "SOLVER.ELASTIC.ENABLED keeps the solver keys as they are for every world; "
        "set SOLVER.REFERENCE_WORLD_SIZE 0");
  }
  const int64_t commit_period = config.get<int64_t>("SOLVER.ELASTIC.COMMIT_PERIOD");
  if (commit_period < 1) throw std::invalid_argument("SOLVER.ELASTIC.COMMIT_PERIOD must be at least 1");
  fix_elastic_seed(config);
  const std::unique_ptr<TrainingDistribution> distribution = choose_distribution(settings);
  // What does not depend on the world, built before the first: a placement of rank -1 opens no log.
  const TrainingRun before_any_world(config, settings, dtrain::Placement{-1, 1, 0, 1, 0, 1}, *distribution);
  TrainableModel m(config, before_any_world);
  // Every worker reads the weights: whichever is rank 0 of the first world hands them on (sync).
  if (const std::string weights = config.get<std::string>("MODEL.WEIGHTS"); !weights.empty()) {
    modeling::load_weights(*m.model, weights);
  }
  const TrainingSet training = load_training_set(config, before_any_world.options);
  if (before_any_world.exchange.power_sgd.start_step > 0) {
    // The optimizer counts its own process's steps: a worker that joins would start counting
    // at 0 and reduce exactly while the others send PowerSGD's factors.
    throw std::invalid_argument(
        "SOLVER.POWER_SGD.START_STEP: " + std::to_string(before_any_world.exchange.power_sgd.start_step) +
        " with elastic training; workers that join would count from 0: use 0");
  }
  const std::unique_ptr<GradientExchange> exchange =
      distribution->attach(m.sgd, m.trainable, 0, before_any_world.exchange);

  libtorch::TorchState state(*m.model, m.sgd);
  int64_t& iteration = state.counter("iteration");
  int64_t furthest = 0;  // the most iterations this process completed: beyond the commit, what a restore redoes
  state.on_reset([&](const dtrain::elastic::WorldChange& change) {
    if (dtrain::rank() != 0) return;
    std::printf("World changed: %d -> %d ranks (round %d, %s); resuming at iteration %lld, redoing %lld\n",
                change.previous_size, change.size, change.round,
                change.restored ? "a worker was lost" : "workers joined", static_cast<long long>(iteration),
                static_cast<long long>(change.restored ? furthest - iteration : 0));
    std::fflush(stdout);
  });
  std::optional<TrainingRun> run;  // this world's
  const Clock::time_point started = Clock::now();
  dtrain::elastic::run(state, [&] {
    const dtrain::Placement placement = current_placement();
    use_cores(settings.threads, placement);
    run.reset();  // the old world's log closes before the new rank 0 opens it
    run.emplace(config, settings, placement, *distribution);
    share_loss_scale(m);  // a new worker's scaler starts afresh
    vision::DataLoader loader(training.dataset,
                              loader_options(config, run->options, run->steps.per_rank, run->seed, placement));
    m.model->train();
    announce_training(*run, loader.items().size(), m.device());
    BatchFeeder batches(loader, feeder_options(loader, *run, iteration, training.paths.annotations, m.device()));
    DivergenceWatch watch(placement.rank, kDivergenceAdvice);
    modeling::LossDict losses;
    training::Trainer trainer([&](int64_t step) {
      losses = train_step(m, *run, *exchange, watch, batches.next(), step);
      furthest = std::max(furthest, step + 1);
    });
    auto& timer = trainer.emplace<training::IterationTimer>();
    ProgressReport progress(*run, timer);
    const auto& lr = trainer.add(lr_schedule_hook(run->schedule, m.sgd));
    trainer.emplace<ProgressHook>(progress, watch, losses, lr, m, run->log);
    trainer.emplace<CheckpointAndEvaluateHook>(m, *run, *exchange, watch);
    trainer.add(elastic_commit_hook(state, watch, commit_period));
    trainer.train(iteration, run->steps.max_iter);
  });
  finish_training(m, config, *run, training.dataset, 0, started);
}

}  // namespace

void train(Config config, const TrainerSettings& settings) {
  const bool float16 =
      config.get<bool>("SOLVER.AMP.ENABLED") && config.get<std::string>("SOLVER.AMP.DTYPE") == "float16";
  if (float16 && config.get<std::string>("MODEL.DEVICE") != "cuda") {
    throw std::invalid_argument(
        "SOLVER.AMP.DTYPE float16 needs MODEL.DEVICE cuda; on the CPU, autocast computes in bfloat16");
  }
  if (config.get<bool>("SOLVER.ELASTIC.ENABLED")) {
    train_elastic(std::move(config), settings);
    return;
  }
  if (settings.distribution == "ps" && float16) {
    throw std::invalid_argument(
        "SOLVER.AMP.DTYPE float16 trains through allreduce: --distribution ps pushes gradients "
        "before they could be unscaled (use bfloat16 there)");
  }
  const std::unique_ptr<TrainingDistribution> distribution = choose_distribution(settings);
  const dtrain::Placement placement = distribution->start();
  use_cores(settings.threads, placement);
  scale_to_world(config, placement.size);
  TrainingRun run(config, settings, placement, *distribution);
  TrainableModel m(config, run);
  int64_t start_iter = restore(m, config, settings, run);
  if (settings.eval_only) {
    evaluate_only(m, run, start_iter);
    return;
  }

  const TrainingSet training = load_training_set(config, run.options);
  vision::DataLoader loader(training.dataset,
                            loader_options(config, run.options, run.steps.per_rank, run.seed, placement));
  const std::unique_ptr<GradientExchange> exchange = distribution->attach(m.sgd, m.trainable, start_iter, run.exchange);
  start_iter = exchange->start_iteration();
  m.model->train();
  announce_training(run, loader.items().size(), m.device());

  BatchFeeder batches(loader, feeder_options(loader, run, start_iter, training.paths.annotations, m.device()));
  DivergenceWatch watch(placement.rank, kDivergenceAdvice);
  modeling::LossDict losses;
  training::Trainer trainer(
      [&](int64_t iteration) { losses = train_step(m, run, *exchange, watch, batches.next(), iteration); });
  auto& timer = trainer.emplace<training::IterationTimer>();
  ProgressReport progress(run, timer);
  const auto& lr = trainer.add(lr_schedule_hook(run.schedule, m.sgd));
  trainer.emplace<ProgressHook>(progress, watch, losses, lr, m, run.log);
  trainer.emplace<CheckpointAndEvaluateHook>(m, run, *exchange, watch);
  int64_t iteration = start_iter;
  trainer.train(iteration, run.steps.max_iter);
  if (!exchange->finish()) {  // a parameter-server worker other than the chief: done
    dtrain::shutdown();
    return;
  }
  finish_training(m, config, run, training.dataset, start_iter, timer.started());
}

}  // namespace dtrain::maskrcnn
