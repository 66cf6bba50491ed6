#include "apps/maskrcnn/training_distribution.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

namespace dtrain::maskrcnn {
namespace {

class AllreduceExchange final : public GradientExchange {
 public:
  AllreduceExchange(torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable, int64_t start_iter,
                    const ExchangeOptions& options)
      : optimizer_(sgd, trainable, optimizer_options(options, start_iter)), start_iter_(start_iter) {}

  int64_t start_iteration() const override { return start_iter_; }
  void zero_grad() override { optimizer_.zero_grad(); }
  // The trainer clips between the two; step() does not reduce the gradients again.
  void wait_for_gradients() override { optimizer_.synchronize(); }
  void apply() override { optimizer_.step(); }
  bool evaluates_during_training() const override { return true; }  // sharded over the ranks
  bool finish() override { return true; }

 private:
  static libtorch::DistributedOptimizerOptions optimizer_options(const ExchangeOptions& options, int64_t start_iter) {
    libtorch::DistributedOptimizerOptions o;
    o.compression = options.compression;
    o.compression_min_bytes = options.compression_min_bytes;
    o.power_sgd = options.power_sgd;
    // The optimizer counts its own steps; a run resumed at start_iter has done that many.
    o.power_sgd.start_step = std::max<int64_t>(0, options.power_sgd.start_step - start_iter);
    return o;
  }

  libtorch::DistributedOptimizer optimizer_;
  int64_t start_iter_;
};

class AllreduceDistribution final : public TrainingDistribution {
 public:
  dtrain::Placement start() override {
    dtrain::init();
    // The runtime's own view: it groups the ranks by host itself.
    return {dtrain::rank(),       dtrain::size(),       dtrain::local_rank(),
            dtrain::local_size(), dtrain::cross_rank(), dtrain::cross_size()};
  }

  // Drawn by rank 0, broadcast to the others.
  uint64_t draw_seed() override {
    std::string drawn = dtrain::rank() == 0 ? std::to_string(std::random_device{}() & 0x7fffffff) : std::string();
    return std::stoull(libtorch::broadcast_bytes(drawn, 0, "trainer.seed"));
  }

  std::unique_ptr<GradientExchange> attach(torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable,
                                           int64_t start_iter, const ExchangeOptions& options) override {
    return std::make_unique<AllreduceExchange>(sgd, trainable, start_iter, options);
  }
};

class ParameterServerExchange final : public GradientExchange {
 public:
  // Clipping needs the whole gradient first: then the pushes wait for step().
  ParameterServerExchange(torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable, int64_t start_iter,
                          bool clipping, int rank)
      : servers_(sgd, trainable, start_iter, push_options(clipping)), rank_(rank) {
    if (rank_ == 0) std::printf("Parameter servers: %s updates\n", servers_.mode().c_str());
  }

  // The chief's weights (checkpoint or MODEL.WEIGHTS) and iteration went to every worker.
  int64_t start_iteration() const override { return servers_.start_step(); }
  void zero_grad() override { servers_.zero_grad(); }
  void wait_for_gradients() override {}       // each worker clips its own gradient
  void apply() override { servers_.step(); }  // the servers apply SGD; the fresh weights are installed
  void before_checkpoint() override { servers_.pull_parameters(); }  // every shard, as the servers hold it now
  bool evaluates_during_training() const override { return rank_ == 0; }
  // The chief waits for the other workers, then pulls the final weights; the others are done.
  bool finish() override {
    servers_.finish();
    return rank_ == 0;
  }

 private:
  static libtorch::PSOptimizerOptions push_options(bool clipping) {
    libtorch::PSOptimizerOptions options;
    options.push_during_backward = !clipping;
    return options;
  }

  libtorch::PSOptimizer servers_;
  int rank_;
};

class ParameterServerDistribution final : public TrainingDistribution {
 public:
  dtrain::Placement start() override {
    dtrain::init_alone();
    placement_ = dtrain::placement_from_environment();
    return placement_;
  }

  // The workers share no runtime: every one derives the seed from the job's token.
  uint64_t draw_seed() override {
    const char* token = std::getenv("DTRAIN_JOB_TOKEN");
    return std::hash<std::string>{}(token ? token : "") & 0x7fffffff;
  }

  std::unique_ptr<GradientExchange> attach(torch::optim::SGD& sgd, const libtorch::NamedTensors& trainable,
                                           int64_t start_iter, const ExchangeOptions& options) override {
    if (options.compression != libtorch::Compression::kNone || options.power_sgd.rank > 0) {
      throw std::invalid_argument(
          "SOLVER.GRADIENT_COMPRESSION and SOLVER.POWER_SGD apply to allreduce: --distribution ps pushes float32 "
          "gradients");
    }
    return std::make_unique<ParameterServerExchange>(sgd, trainable, start_iter, options.clipping, placement_.rank);
  }

 private:
  dtrain::Placement placement_;
};

}  // namespace

ExchangeOptions exchange_options(const vision::config::Config& config, bool clipping) {
  ExchangeOptions options;
  options.clipping = clipping;
  const std::string dtype = config.get<std::string>("SOLVER.GRADIENT_COMPRESSION.DTYPE");
  if (dtype != "float16" && dtype != "bfloat16") {
    throw std::invalid_argument("SOLVER.GRADIENT_COMPRESSION.DTYPE: \"" + dtype +
                                "\", expected \"float16\" or \"bfloat16\"");
  }
  options.compression_min_bytes = config.get<int64_t>("SOLVER.GRADIENT_COMPRESSION.MIN_BYTES");
  if (options.compression_min_bytes < 0) {
    throw std::invalid_argument("SOLVER.GRADIENT_COMPRESSION.MIN_BYTES: " +
                                std::to_string(options.compression_min_bytes) + ", expected 0 or more");
  }
  if (config.get<bool>("SOLVER.GRADIENT_COMPRESSION.ENABLED")) {
    options.compression = dtype == "float16" ? libtorch::Compression::kFp16 : libtorch::Compression::kBf16;
  }
  const int64_t rank = config.get<int64_t>("SOLVER.POWER_SGD.RANK");
  const int64_t start_step = config.get<int64_t>("SOLVER.POWER_SGD.START_STEP");
  if (rank < 0 || rank > 1024) {
    throw std::invalid_argument("SOLVER.POWER_SGD.RANK: " + std::to_string(rank) + ", expected 0 (off) to 1024");
  }
  if (start_step < 0) {
    throw std::invalid_argument("SOLVER.POWER_SGD.START_STEP: " + std::to_string(start_step) + ", expected 0 or more");
  }
  if (rank > 0 && options.compression != libtorch::Compression::kNone) {
    throw std::invalid_argument(
        "SOLVER.POWER_SGD.RANK: " + std::to_string(rank) +
        " with SOLVER.GRADIENT_COMPRESSION.ENABLED True: PowerSGD's factors travel in float32; choose one");
  }
  options.power_sgd.rank = static_cast<int>(rank);
  options.power_sgd.start_step = start_step;
  return options;
}

std::unique_ptr<TrainingDistribution> choose_distribution(const TrainerSettings& settings) {
  if (settings.distribution != "ps") return std::make_unique<AllreduceDistribution>();
  if (settings.eval_only) {
    throw std::invalid_argument(
        "--distribution ps applies to training; evaluate with `dtrain run -np N dtrain-maskrcnn eval`");
  }
  return std::make_unique<ParameterServerDistribution>();
}

}  // namespace dtrain::maskrcnn
