// dtrain for LibTorch: collectives on at::Tensor, a DistributedOptimizer that allreduces
// each gradient as soon as backward produces it, broadcast of parameters and optimizer
// state, a distributed sampler and rank-0 checkpoints. The recipe of Horovod and
// SageMaker's data-parallel library:
//
//   dtrain::init();
//   auto device = dtrain::libtorch::pin_device();             // cuda:local_rank, or cpu
//   torch::optim::Adam adam(model->parameters(), lr * dtrain::size());
//   dtrain::libtorch::DistributedOptimizer optimizer(adam, model->named_parameters().pairs());
//   dtrain::libtorch::broadcast_parameters(named_state(*model), 0);
//   dtrain::libtorch::broadcast_optimizer_state(adam, 0);
//   for (...) { optimizer.zero_grad(); loss.backward(); optimizer.step(); }
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/dtrain.h"
#include "dtrain/elastic.h"
#include "dtrain/torch_threads.h"

namespace dtrain::libtorch {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// ---- tensors ----

DataType dtype_of(at::ScalarType type);
at::ScalarType scalar_type_of(DataType dtype);

// A view of a contiguous CPU or CUDA tensor's memory (no copy). A CUDA tensor's view names
// its device and LibTorch's current stream on it, so the runtime's work is ordered after
// what was queued there and before what is queued after it. Throws for other tensors.
TensorView view_of(const at::Tensor& tensor);

// The device the runtime works on `tensor` from: its own (the CPU, or CUDA when the runtime
// has its GPU engines, dtrain::cuda_built()), else the CPU, through a copy.
at::Device reachable_device(const at::Tensor& tensor);

// Whether collectives use `tensor` where it is: contiguous and on its reachable device.
// Others are staged through a contiguous copy there.
bool usable_in_place(const at::Tensor& tensor);

// The device this rank should use: cuda:local_rank when CUDA is available (and made
// current), else the CPU.
at::Device pin_device();

// Collectives. Tensors usable in place (above) are reduced where they are; others are staged
// through a contiguous copy on their reachable device and the result copied back. On CUDA tensors the result is
// ordered on the current stream when the handle returns, as with PyTorch's collectives: work
// queued there afterwards sees it; the CPU does not wait for the GPU. `process_set`: the ranks
// the collective runs over (dtrain::ProcessSet; roots are job ranks), every rank by default.
at::Tensor allreduce(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                     const ProcessSet& process_set = {});
void allreduce_(at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                const ProcessSet& process_set = {});
at::Tensor allgather(const at::Tensor& tensor, const std::string& name, const ProcessSet& process_set = {});
at::Tensor broadcast(const at::Tensor& tensor, int root, const std::string& name, const ProcessSet& process_set = {});
void broadcast_(at::Tensor& tensor, int root, const std::string& name, const ProcessSet& process_set = {});
// Returns the received tensor and how many rows came from each rank.
std::pair<at::Tensor, std::vector<std::int64_t>> alltoall(const at::Tensor& tensor, const std::string& name,
                                                          std::vector<std::int64_t> splits = {},
                                                          const ProcessSet& process_set = {});
at::Tensor reducescatter(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                         const ProcessSet& process_set = {});

// Collectives as differentiable operations, for models that compute across ranks:
// synchronized batch normalisation, features gathered from every rank for a contrastive
// loss, experts exchanged by alltoall. What they differentiate is the sum of all ranks'
// losses: the gradient reaching one rank's input collects what every rank's loss contributed
// through the collective (the objective whose gradient DistributedOptimizer's Average divides
// by size(), so the model trains as it would in one process on the whole batch). Horovod's
// allgather and broadcast average those contributions instead, which gives size() times
// smaller gradients than that objective. Every rank calls each one in the same order, in
// forward and in backward; the collectives are named `name` + ".forward" and ".backward".
// allreduce and reducescatter take Sum or Average.
at::Tensor allreduce_with_gradient(const at::Tensor& tensor, const std::string& name, ReduceOp op = ReduceOp::kSum);
at::Tensor allgather_with_gradient(const at::Tensor& tensor, const std::string& name);
at::Tensor broadcast_with_gradient(const at::Tensor& tensor, int root, const std::string& name);
std::pair<at::Tensor, std::vector<std::int64_t>> alltoall_with_gradient(const at::Tensor& tensor,
                                                                        const std::string& name,
                                                                        std::vector<std::int64_t> splits = {});
at::Tensor reducescatter_with_gradient(const at::Tensor& tensor, const std::string& name, ReduceOp op = ReduceOp::kSum);

// An asynchronous tensor collective: wait() returns the result tensor.
class TensorHandle {
 public:
  TensorHandle() = default;
  bool poll() const;
  // Until the runtime finished it (dtrain::Handle::wait_finished); wait() then returns at once.
  void wait_finished() const;
  at::Tensor wait();
  // allgather, alltoall: rows received from each rank (after wait()).
  std::vector<std::int64_t> received_splits() const;

 private:
  friend TensorHandle allreduce_async(const at::Tensor&, const std::string&, const ReduceOptions&, const ProcessSet&);
  friend TensorHandle allreduce_async_(at::Tensor&, const std::string&, const ReduceOptions&, const ProcessSet&);
  friend TensorHandle allgather_async(const at::Tensor&, const std::string&, const ProcessSet&);
  friend TensorHandle broadcast_async_(at::Tensor&, int, const std::string&, const ProcessSet&);
  friend TensorHandle reducescatter_async(const at::Tensor&, const std::string&, const ReduceOptions&,
                                          const ProcessSet&);
  friend TensorHandle alltoall_async(const at::Tensor&, const std::string&, std::vector<std::int64_t>,
                                     const ProcessSet&);
  struct State;
  std::shared_ptr<State> state_;
};

TensorHandle allreduce_async(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                             const ProcessSet& process_set = {});
TensorHandle allreduce_async_(at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                              const ProcessSet& process_set = {});

// Several allreduces negotiated and executed as one (dtrain::grouped_allreduce): none of them
// starts before every rank submitted all of them. One name per tensor; wait() returns the
// results in the tensors' order (the tensors themselves for the in-place form).
class TensorGroupHandle {
 public:
  TensorGroupHandle() = default;
  bool poll() const;
  void wait_finished() const;  // as TensorHandle's
  std::vector<at::Tensor> wait();

 private:
  friend TensorGroupHandle grouped_allreduce_async(const std::vector<at::Tensor>&, const std::vector<std::string>&,
                                                   const ReduceOptions&, const ProcessSet&);
  friend TensorGroupHandle grouped_allreduce_async_(const std::vector<at::Tensor>&, const std::vector<std::string>&,
                                                    const ReduceOptions&, const ProcessSet&);
  // Stages the tensors and submits them as one grouped allreduce.
  static TensorGroupHandle start(const std::vector<at::Tensor>& tensors, const std::vector<std::string>& names,
                                 const ReduceOptions& options, bool in_place, const ProcessSet& process_set);
  struct State;
  std::shared_ptr<State> state_;
};
TensorGroupHandle grouped_allreduce_async(const std::vector<at::Tensor>& tensors, const std::vector<std::string>& names,
                                          const ReduceOptions& options = {}, const ProcessSet& process_set = {});
// In place: each tensor receives its result.
TensorGroupHandle grouped_allreduce_async_(const std::vector<at::Tensor>& tensors,
                                           const std::vector<std::string>& names, const ReduceOptions& options = {},
                                           const ProcessSet& process_set = {});
TensorHandle allgather_async(const at::Tensor& tensor, const std::string& name, const ProcessSet& process_set = {});
TensorHandle broadcast_async_(at::Tensor& tensor, int root, const std::string& name,
                              const ProcessSet& process_set = {});
TensorHandle reducescatter_async(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options = {},
                                 const ProcessSet& process_set = {});
TensorHandle alltoall_async(const at::Tensor& tensor, const std::string& name, std::vector<std::int64_t> splits = {},
                            const ProcessSet& process_set = {});

// ---- training ----

enum class Compression { kNone, kFp16, kBf16 };

// ZeRO's stages 1 and 2 (DeepSpeed; PyTorch's ZeroRedundancyOptimizer is stage 1): each rank
// owns a shard of the parameters, steps only those and keeps optimizer state only for them
// (Adam's two moments: about 1/size() of the memory), and the stepped parameters (frozen ones
// too) are then allgathered. The parameters are cut into buckets of sharding_bucket_bytes from
// the last one back; within each bucket owners are dealt largest parameter first, each to the
// rank owning the fewest values so far over all buckets (ties: the lowest rank). Every
// parameter, frozen or not, has an owner, so freezing one moves no state; owners are dealt
// again when the world changes (an elastic reset).
enum class Sharding {
  kNone,
  // ZeRO-1: gradients are allreduced (overlapped with backward, as without sharding) and every
  // rank keeps them whole, so gradient clipping works as before.
  kOptimizerState,
  // ZeRO-2: a bucket's gradients are reduce-scattered as soon as backward has produced them
  // all; synchronize() waits for the last ones. Each rank then keeps only its own parameters'
  // gradients and frees the others, so whatever is computed from the gradients on one rank is
  // that shard's, not the whole model's: a norm for clipping, and a loss scaler's check for
  // infinities, which must then be combined across ranks (an allreduce) before anyone decides
  // to skip a step, or the ranks part ways.
  kGradients,
};

// PowerSGD (Vogels et al., 2019; PyTorch DDP's powerSGD_hook, with its defaults but the rank and
// start_step):
// a gradient that is a matrix (more dimensions fold into dim 0 x the rest) travels as two
// rank-`rank` factors, one power iteration per step, the error carried into the next step.
struct PowerSgdOptions {
  int rank = 0;  // 0: off. DDP's matrix_approximation_rank (1 there; 4 is a common choice)
  // Steps whose gradients are reduced exactly before compression begins (DDP's
  // start_powerSGD_iter, 1000 by default there): early gradients change fast. Counted by this
  // DistributedOptimizer from its construction, so every rank must build it at the same step
  // (a resumed run passes what is left; an elastic worker that joins would count from 0).
  std::int64_t start_step = 0;
  // Gradients whose factors would not be this many times smaller travel whole.
  double min_compression_rate = 2.0;
  bool error_feedback = true;  // add what the last approximation left out to the next gradient
  bool warm_start = true;      // each step's power iteration starts from the last step's Q
  std::uint64_t seed = 0;      // the random first Q, the same on every rank
};

struct DistributedOptimizerOptions {
  ReduceOp op = ReduceOp::kAverage;  // or kSum
  // Backward passes accumulated locally before the gradients are reduced and step() runs.
  int backward_passes_per_step = 1;
  // kFp16 / kBf16: float32 and float64 gradients travel (and are summed) as float16 /
  // bfloat16, half the bytes, and come back in their own dtype; float16 and bfloat16 ones
  // travel as they are. float16 keeps 3 more bits of mantissa, bfloat16 float32's range
  // (no overflow to infinity, no need of a predivide factor).
  Compression compression = Compression::kNone;
  // Gradients smaller than this travel uncompressed, by dtype or by PowerSGD (DDP's PowerSGD
  // hook spares small tensors the same way): their bytes are few, while their values (biases,
  // norms) are sensitive.
  std::int64_t compression_min_bytes = 0;
  // Float32 and float64 gradients approximated by low-rank factors; with op kAverage only, and
  // not with `compression` or sharding (refused).
  PowerSgdOptions power_sgd;
  // Average as (sum of grad / f) * f / size, to keep low-precision sums in range.
  double gradient_predivide_factor = 1.0;
  std::string name_prefix = "grad.";
  // kGradients does not combine with compression (refused).
  Sharding sharding = Sharding::kNone;
  // Sharding: parameters are split into buckets of about this many bytes (of gradients), from
  // the last parameter back; with kGradients a bucket's reduction starts as soon as backward
  // has produced all its gradients (DDP's bucket_cap_mb, 25 MiB). Owners are assigned within
  // each bucket, so a smaller bucket spreads the work as evenly but moves more padding.
  std::int64_t sharding_bucket_bytes = std::int64_t{25} << 20;
  // The ranks whose gradients are averaged (Horovod's process_set=): every rank by default.
  // Only its members make the optimizer; not with sharding or PowerSGD (refused).
  ProcessSet process_set;
};

// Wraps any torch::optim::Optimizer. A hook on each parameter's gradient accumulator starts
// the allreduce of that gradient the moment backward has produced it, so communication
// overlaps the rest of backward; step() waits for the outstanding ones, then steps.
//
// Every parameter the optimizer updates must be in `named_parameters` (the constructor and
// each synchronize() refuse one that requires a gradient but is missing, naming where it
// sits in param_groups(): left out, it would train on each rank alone and the replicas
// would drift apart). A named parameter takes part while it requires a gradient, so
// freezing or unfreezing one during training is followed (the same on every rank). Sparse
// gradients (an embedding built with sparse(true)) are reduced as dense tensors.
class DistributedOptimizer {
 public:
  DistributedOptimizer(torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters,
                       DistributedOptimizerOptions options = {});
  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Finishes every gradient's allreduce (starting those whose hook did not fire: a parameter
  // that got no gradient on this rank is reduced as zeros, so ranks never deadlock). Until
  // the next backward pass, calling it again does nothing: gradients are reduced once.
  void synchronize();
  // synchronize() unless it already ran since the last backward pass, then the wrapped
  // optimizer's step(). So Horovod's gradient clipping pattern reduces once:
  //   optimizer.synchronize(); clip(...); optimizer.step();
  // (Horovod's step() reduces again here, and only warns; hence its skip_synchronize().)
  void step();
  void zero_grad();
  torch::optim::Optimizer& optimizer() { return optimizer_; }

  // The bytes this rank handed to the runtime's allreduces in the last synchronize(): each
  // gradient as it travels (compressed or not), PowerSGD's factors where it approximates one.
  // 0 with Sharding::kGradients, whose reduce-scatters it does not count.
  std::int64_t reduced_bytes() const;

  // With sharding, collective: every rank's shard of the optimizer state is copied to `root`,
  // whose optimizer then holds the state of every parameter, as without sharding: save it
  // there (Checkpointer::save runs on rank 0). A checkpoint so saved loads into any world size,
  // sharded or not; the next step() drops the state of parameters a rank does not own.
  // Without sharding it does nothing.
  void consolidate_state(int root = 0);
  // The names (as in named_parameters) of the parameters this rank steps now: all of them
  // without sharding.
  std::vector<std::string> owned_parameters() const;

  // Horovod's `with optimizer.skip_synchronize(): optimizer.step()`, for code written that
  // way: while the returned guard lives, step() only steps. step() then refuses to run
  // with allreduces in flight (a backward pass after the last synchronize()), since they
  // would write into the gradients while the optimizer reads them.
  class SkipSynchronize {
   public:
    explicit SkipSynchronize(DistributedOptimizer& owner);
    ~SkipSynchronize();
    SkipSynchronize(const SkipSynchronize&) = delete;
    SkipSynchronize& operator=(const SkipSynchronize&) = delete;

   private:
    DistributedOptimizer& owner_;
  };
  [[nodiscard]] SkipSynchronize skip_synchronize() { return SkipSynchronize(*this); }

 private:
  struct Impl;
  torch::optim::Optimizer& optimizer_;
  std::unique_ptr<Impl> impl_;
};

// Parameter-server training (`dtrain run --ps`): the same shape as DistributedOptimizer.
// The wrapped optimizer only declares the update rule (torch::optim::SGD or Adam, one
// parameter group) and the learning rate, read at every step: the servers hold the
// parameters, sharded by size, and apply the update themselves. A hook pushes each
// gradient's pieces the moment backward produces it; each reply carries the piece's
// fresh value, and step() installs them. No dtrain::init() is needed: the worker's rank,
// the job token and the servers come from the launcher's environment. Asynchronous by
// default; `dtrain run --ps --ps-mode sync` makes the servers average each step's
// gradients over all workers (the allreduce result), `--ps-staleness S` bounds how far
// a worker may run ahead.
struct PSOptimizerOptions {
  // Push each gradient as backward produces it (overlapping communication with backward).
  // false: step() pushes them all, so the caller may change the gradients in between
  // (gradient clipping; each worker then clips its own gradient).
  bool push_during_backward = true;
};

class PSOptimizer {
 public:
  // Registers with every server. The chief's (rank 0's) current parameters initialise the
  // servers, and `start_step` (where its checkpoint left off) is given to every worker;
  // the others wait for that and start from the chief's values.
  PSOptimizer(torch::optim::Optimizer& optimizer, const NamedTensors& named_parameters, std::int64_t start_step = 0,
              PSOptimizerOptions options = {});
  ~PSOptimizer();
  PSOptimizer(const PSOptimizer&) = delete;
  PSOptimizer& operator=(const PSOptimizer&) = delete;

  int rank() const;
  int size() const;
  const std::string& mode() const;  // "async" or "sync"
  std::int64_t start_step() const;  // the chief's
  std::int64_t steps_taken() const;

  // Pushes what backward has not (zeros for a parameter without gradient), waits for
  // every reply and installs the fresh values. Throws dtrain::Error naming the server
  // that failed or did not answer within DTRAIN_PS_RPC_TIMEOUT seconds.
  void step();
  void zero_grad();
  // Copies the servers' current values into the parameters (the chief before a
  // checkpoint or the final model).
  void pull_parameters();
  // The chief: waits until the other workers have finished (or were dropped), then pulls.
  // Every worker: tells the servers it is done. Call once, after the last step.
  void finish(double wait_for_others_s = 3600);
  torch::optim::Optimizer& optimizer() { return optimizer_; }

 private:
  struct Impl;
  torch::optim::Optimizer& optimizer_;
  std::unique_ptr<Impl> impl_;
};

// Every parameter and buffer of a module, by its qualified name: what broadcast_parameters
// and checkpoints need.
NamedTensors named_state(const torch::nn::Module& module);

// Copies `root`'s values into every rank's tensors, in place.
void broadcast_parameters(const NamedTensors& tensors, int root);
// Copies `root`'s optimizer state (per-parameter state and options such as the learning rate
// and momentum) to every rank.
void broadcast_optimizer_state(torch::optim::Optimizer& optimizer, int root);
// Broadcasts arbitrary bytes (e.g. a serialized object) from `root`.
std::string broadcast_bytes(const std::string& bytes, int root, const std::string& name);

// The average of a scalar across ranks (e.g. the loss), as the seeds' examples print it.
double metric_average(double value, const std::string& name);

// ---- data ----

// Splits a dataset's indices across ranks: each rank a disjoint shard of the same length
// (padding by wrapping around, as PyTorch's DistributedSampler does, unless drop_last),
// reshuffled every epoch from a seed all ranks share.
class DistributedSampler {
 public:
  DistributedSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle = true, std::uint64_t seed = 0,
                     bool drop_last = false);
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }
  std::vector<std::size_t> indices() const;
  std::size_t num_samples() const { return num_samples_; }

 private:
  std::size_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  bool drop_last_;
  std::size_t num_samples_;
  std::int64_t epoch_ = 0;
};

// ---- elastic training (include/dtrain/elastic.h, docs/elastic.md) ----

// An epoch's samples for a world whose size may change mid-epoch. All ranks share one
// shuffled order per epoch (from the seed); what whole steps of all ranks consumed is a
// prefix of it, so after a reset the rest is dealt out again to the new world: no sample is
// skipped or seen twice within an epoch (but for the padding of the epoch's last batch, which
// wraps around as DistributedSampler's does).
class ElasticSampler {
 public:
  explicit ElasticSampler(std::size_t dataset_size, std::uint64_t seed = 0, bool shuffle = true);
  // Starts `epoch` from its first sample.
  void set_epoch(std::int64_t epoch);
  // Rank `rank` of `size`'s share of what remains of the epoch: every size-th sample from its
  // rank's position, padded (wrapping around) so every rank has the same number.
  std::vector<std::size_t> indices(int rank, int size) const;
  // After every rank finished a step of `batch_size` samples each (the same call on every rank).
  void record_batch(std::size_t batch_size, int size);
  std::int64_t epoch() const { return epoch_; }
  std::size_t consumed() const { return consumed_; }
  std::size_t remaining() const { return dataset_size_ - consumed_; }
  std::size_t dataset_size() const { return dataset_size_; }
  // For TorchState: where the epoch stands.
  void set_position(std::int64_t epoch, std::size_t consumed);

 private:
  std::size_t dataset_size_;
  std::uint64_t seed_;
  bool shuffle_;
  std::int64_t epoch_ = 0;
  std::size_t consumed_ = 0;
};

// An elastic State for LibTorch training loops: the model's parameters and buffers, the
// optimizer's state and options, a sampler's position and the loop's own counters. save()
// copies them in memory (the model's tensors into buffers of their own, the optimizer through
// LibTorch's archive); restore() copies them back; sync() broadcasts rank 0's to every rank.
class TorchState final : public elastic::State {
 public:
  TorchState(torch::nn::Module& model, torch::optim::Optimizer& optimizer, ElasticSampler* sampler = nullptr);

  // The loop's counters (e.g. "step"): saved, restored and synced with the rest. Names are
  // single words; the reference stays valid for the state's life.
  std::int64_t& counter(const std::string& name) { return counters_[name]; }

  void save() override;
  void restore() override;
  void sync() override;

 private:
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
  ElasticSampler* sampler_;
  std::map<std::string, std::int64_t> counters_;
  // The last save().
  std::vector<at::Tensor> saved_tensors_;
  std::string saved_optimizer_;
  std::map<std::string, std::int64_t> saved_counters_;
  std::int64_t saved_epoch_ = 0;
  std::size_t saved_consumed_ = 0;
};

// ---- checkpoints ----

struct TrainingProgress {
  std::int64_t epoch = 0;
  std::int64_t step = 0;
};

// Checkpoints written by rank 0 alone, atomically (temporary file, fsync, rename), keeping
// the last `keep_last`. Each holds the model's parameters and buffers, the optimizer state,
// the progress counters and rank 0's random-number state, framed with a length and a CRC32
// so a damaged file is named and refused, never loaded.
class Checkpointer {
 public:
  // `rank` -1: this process's rank in the runtime (dtrain::init()). A rank given here
  // (parameter-server workers, which do not use the runtime) makes restore() local:
  // rank 0 reads the newest checkpoint itself, other ranks get nothing and load nothing.
  explicit Checkpointer(std::string directory, int keep_last = 3, int rank = -1);

  // Collective-free: ranks other than 0 return at once.
  void save(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
            const TrainingProgress& progress) const;
  // Collective: rank 0 loads the newest checkpoint and broadcasts it; every rank then loads
  // it. Returns nothing when the directory holds no checkpoint.
  std::optional<TrainingProgress> restore(torch::nn::Module& model, torch::optim::Optimizer& optimizer) const;

  // Paths of the checkpoints present, oldest first.
  std::vector<std::string> list() const;
  const std::string& directory() const { return directory_; }

 private:
  int my_rank() const;

  std::string directory_;
  int keep_last_;
  int rank_;
};

}  // namespace dtrain::libtorch
