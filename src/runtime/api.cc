// The public functions of include/dtrain/dtrain.h: checks what can be checked on this rank
// alone (the rest is the coordinator's job), builds requests, and hands them to the loop.
#include <signal.h>

#include <cstdlib>
#include <span>

#include "concurrency/mutex.h"
#include "dtrain/dtrain.h"
#include "runtime/background_loop.h"
#include "runtime/elastic_membership.h"
#include "runtime/external_world.h"
#include "runtime/gpu/device_memory.h"
#include "runtime/logging.h"
#include "runtime/process_sets.h"
#include "runtime/transport/transport_factory.h"

namespace dtrain {

// ---- Handle ----

bool Handle::poll() const {
  if (!state_) return true;
  concurrency::MutexLock lock(state_->mutex);
  return state_->status != Status::kPending;
}

void Handle::wait_finished() const {
  if (!state_) return;
  concurrency::MutexLock lock(state_->mutex);
  state_->wait_until_finished(lock);
}

void Handle::wait() const {
  if (!state_) throw Error("dtrain: wait() on an empty Handle");
  if (!poll()) {
    // This thread runs the negotiation until the operation is done (no hand-off to the
    // loop's thread and back); the loop may be gone if dtrain was shut down meanwhile, or its
    // process set removed.
    if (std::shared_ptr<runtime::BackgroundLoop> running = state_->loop.lock()) running->wait(*state_);
  }
  concurrency::MutexLock lock(state_->mutex);
  state_->wait_until_finished(lock);
  if (state_->status == Status::kFailed) {
    if (state_->workers_lost) throw WorkersLostError(state_->error);
    throw Error(state_->error);
  }
}

Status Handle::status() const {
  if (!state_) return Status::kFailed;
  concurrency::MutexLock lock(state_->mutex);
  return state_->status;
}

std::string Handle::error() const {
  if (!state_) return "empty handle";
  concurrency::MutexLock lock(state_->mutex);
  return state_->error;
}

TensorView Handle::output() const {
  wait();
  return state_->output;
}

const std::vector<std::int64_t>& Handle::received_splits() const {
  wait();
  return state_->received_splits;
}

int Handle::last_joined_rank() const {
  wait();
  return state_->last_joined_rank;
}

CollectiveResult::CollectiveResult(Handle operation) : operation_(std::move(operation)), output_(operation_.output()) {}

// ---- lifecycle ----

namespace {

using runtime::BackgroundLoop;
using runtime::OpType;
using runtime::Request;
using runtime::TensorEntry;

concurrency::Mutex lifecycle_mutex;
std::shared_ptr<BackgroundLoop> loop DTRAIN_GUARDED_BY(lifecycle_mutex);  // shared with threads waiting in it
int init_generation DTRAIN_GUARDED_BY(lifecycle_mutex) = 0;
int last_elastic_round DTRAIN_GUARDED_BY(lifecycle_mutex) = 0;  // the newest round this process belonged to

std::shared_ptr<BackgroundLoop> current_loop() {
  concurrency::MutexLock lock(lifecycle_mutex);
  return loop;
}

// The loop, kept alive for the caller's use of it even if another thread shuts dtrain down
// meanwhile (that thread then waits in stop() for what is in flight).
std::shared_ptr<BackgroundLoop> running_loop(const char* what) {
  std::shared_ptr<BackgroundLoop> running = current_loop();
  if (!running) throw Error(std::string("dtrain::") + what + ": dtrain is not initialised; call dtrain::init() first");
  return running;
}

void shutdown_at_exit() {
  try {
    shutdown();
  } catch (...) {}
}

std::string describe(OpType type, const std::string& name) {
  return "dtrain::" + std::string(runtime::to_string(type)) + " '" + name + "'";
}

void check_view(OpType type, const std::string& name, const TensorView& view, const char* which) {
  for (auto d : view.shape) {
    if (d < 0)
      throw Error(describe(type, name) + ": " + which + " has a negative dimension " +
                  runtime::shape_string(view.shape));
  }
  if (!view.data && view.num_elements() > 0) throw Error(describe(type, name) + ": " + which + " has no data pointer");
  if (!view.device.is_cuda() && (view.cuda_stream || view.ready_event)) {
    throw Error(describe(type, name) + ": " + which + " is on the CPU but names a CUDA stream or event");
  }
}

// CUDA tensors: the event the runtime waits for before reading `view` (see TensorView).
std::shared_ptr<void> ready_event_of(OpType type, const std::string& name, const TensorView& view, const char* which) {
  if (!view.device.is_cuda()) return nullptr;
  return runtime::gpu::capture_ready(view, describe(type, name) + ": " + which);
}

void check_name(OpType type, const std::string& name) {
  if (name.empty()) throw Error(describe(type, name) + ": the name is empty");
  if (name.rfind("__dtrain", 0) == 0)
    throw Error(describe(type, name) + ": names starting with '__dtrain' are reserved");
}

void check_scaling(OpType type, const std::string& name, DataType dtype, const ReduceOptions& options) {
  if (!is_floating_point(dtype) && (options.prescale_factor != 1.0 || options.postscale_factor != 1.0)) {
    throw Error(describe(type, name) + ": prescale/postscale factors need a floating-point tensor, got " +
                to_string(dtype));
  }
}

// Where an operation runs: the loop of its process set, and this rank's place in the set.
struct Target {
  std::shared_ptr<BackgroundLoop> loop;
  int rank = 0;
  int size = 1;
};

Target target_of(const ProcessSet& set, OpType type, const std::string& name) {
  std::shared_ptr<BackgroundLoop> loop =
      set.is_global() ? running_loop(runtime::to_string(type)) : runtime::process_set_loop(set, describe(type, name));
  const int rank = loop->config().rank, size = loop->config().size;
  return {std::move(loop), rank, size};
}

TensorEntry make_entry(const Target& target, OpType type, const std::string& name, const TensorView& input,
                       const TensorView& output, std::shared_ptr<detail::OpState> state) {
  TensorEntry entry;
  entry.request.rank = target.rank;
  entry.request.type = type;
  entry.request.name = name;
  entry.request.dtype = input.dtype;
  entry.request.device = input.device.type;
  entry.request.shape = input.shape;
  entry.input = input;
  entry.output = output;
  entry.state = std::move(state);
  entry.submitted = std::chrono::steady_clock::now();
  entry.ready = ready_event_of(type, name, input, type == OpType::kBroadcast ? "tensor" : "input");
  return entry;
}

// `caller_waits`: a blocking call, which waits for the handle next (see BackgroundLoop::submit).
Handle submit_entries(const Target& target, std::vector<TensorEntry> entries, bool caller_waits) {
  Handle handle(entries.at(0).state);
  entries[0].state->loop = target.loop;
  target.loop->submit(std::move(entries), caller_waits);
  return handle;
}

Handle submit_one(const Target& target, TensorEntry entry, bool caller_waits) {
  std::vector<TensorEntry> entries;
  entries.push_back(std::move(entry));
  return submit_entries(target, std::move(entries), caller_waits);
}

// Gloo writes to its sockets without MSG_NOSIGNAL, and SIGPIPE's default action ends the
// process: a rank writing to a peer that just died was killed with it (seen in an elastic job
// losing rank 0: a survivor died of SIGPIPE, and the world could not shrink). Ignored, the
// write fails with EPIPE and the operation with WorkersLostError: at once as a rule, at the
// latest after DTRAIN_TIMEOUT_S (a Gloo send queued when the peer's connection was reset
// waits that long; docs/elastic.md). A disposition the program chose (a handler, or ignoring
// it already) is left alone.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

// init(), init(ExternalWorld) and init_alone().
void start(bool alone, const ExternalWorld* external = nullptr) {
  concurrency::MutexLock lock(lifecycle_mutex);
  if (loop) return;
  runtime::RuntimeConfig config = runtime::read_config_from_environment();
  if (external) runtime::adopt_external_world(config, *external, std::getenv("DTRAIN_STALL_SHUTDOWN_S") != nullptr);
  runtime::configure_logging(config.rank, config.hostname);
  if (alone) {
    config.rank = config.local_rank = config.cross_rank = 0;
    config.size = config.local_size = config.cross_size = 1;
    config.rendezvous_addr.clear();  // nothing to meet, nothing to report ready as rank 0
    config.rendezvous_port = 0;
    config.launched_by_mpirun = false;
    config.launched_by_slurm = false;
    config.rendezvous_in_step = false;
  }
  if (!alone) ignore_sigpipe_unless_handled();
  int generation = init_generation++;
  if (config.elastic_worker >= 0 && !alone) {
    // The round decides the world; its number keys the Gloo rendezvous, the same on every member.
    runtime::adopt_round(config, runtime::join_next_round(config, last_elastic_round));
    last_elastic_round = config.elastic_round;
    generation = config.elastic_round;
    runtime::configure_logging(config.rank, config.hostname);
  }
  config.generation = generation;
  std::unique_ptr<runtime::Transport> transport;
  try {
    transport = runtime::connect_transport(config, generation);
  } catch (const Error& e) {
    // A member lost while the round's world forms is a lost worker like any other.
    if (config.elastic_worker >= 0 && !alone) throw WorkersLostError(e.what());
    throw;
  }
  loop = std::make_shared<BackgroundLoop>(std::move(config), std::move(transport));
  static bool registered = false;
  if (!registered) {
    std::atexit(shutdown_at_exit);
    registered = true;
  }
}

}  // namespace

bool cuda_built() { return runtime::gpu::built_with_cuda(); }

void init() { start(false); }
void init(const ExternalWorld& world) { start(false, &world); }
void init_alone() { start(true); }

namespace runtime {
std::shared_ptr<BackgroundLoop> job_loop(const char* what) { return running_loop(what); }
}  // namespace runtime

void shutdown() {
  runtime::end_process_sets();  // each set's members stop it together, while the job's loop still runs
  std::shared_ptr<BackgroundLoop> ending;
  {
    concurrency::MutexLock lock(lifecycle_mutex);
    ending = std::move(loop);
  }
  if (ending) ending->stop();
}

bool is_initialized() {
  concurrency::MutexLock lock(lifecycle_mutex);
  return loop != nullptr;
}

Placement placement_from_environment() {
  const runtime::RuntimeConfig config = runtime::read_config_from_environment();
  return {config.rank, config.size, config.local_rank, config.local_size, config.cross_rank, config.cross_size};
}

void start_timeline(const std::string& path, bool mark_cycles) {
  const std::shared_ptr<BackgroundLoop> running = running_loop("start_timeline");
  if (path.empty()) throw Error("dtrain::start_timeline: the path is empty");
  if (running->config().rank != 0) return;
  running->replace_timeline(std::make_unique<runtime::Timeline>(path, mark_cycles));
}

void stop_timeline() {
  const std::shared_ptr<BackgroundLoop> running = running_loop("stop_timeline");
  if (running->config().rank == 0) running->replace_timeline(nullptr);
}

int rank() { return running_loop("rank")->config().rank; }

namespace runtime {
int current_elastic_round() { return running_loop("elastic round")->config().elastic_round; }
}  // namespace runtime

int size() { return running_loop("size")->config().size; }
int local_rank() { return running_loop("local_rank")->config().local_rank; }
int local_size() { return running_loop("local_size")->config().local_size; }
int cross_rank() { return running_loop("cross_rank")->config().cross_rank; }
int cross_size() { return running_loop("cross_size")->config().cross_size; }

// ---- operations ----

// Each operation's entries are built (and the arguments checked) by one function below, which
// both the asynchronous and the blocking form submit.
namespace {

// Spans, not vectors: a blocking allreduce of one tensor passes its arguments where they are
// (copying them into vectors cost several allocations on a path of a few µs).
std::vector<TensorEntry> allreduce_entries(const Target& target, std::span<const std::string> names,
                                           std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                                           const ReduceOptions& options) {
  if (names.empty() || names.size() != inputs.size() || names.size() != outputs.size()) {
    throw Error("dtrain::grouped_allreduce: needs one name, input and output per tensor (got " +
                std::to_string(names.size()) + " names, " + std::to_string(inputs.size()) + " inputs, " +
                std::to_string(outputs.size()) + " outputs)");
  }
  auto state = std::make_shared<detail::OpState>(static_cast<int>(names.size()));
  std::vector<TensorEntry> entries;
  entries.reserve(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    check_name(OpType::kAllreduce, names[i]);
    check_view(OpType::kAllreduce, names[i], inputs[i], "input");
    check_view(OpType::kAllreduce, names[i], outputs[i], "output");
    if (inputs[i].dtype != outputs[i].dtype || inputs[i].num_elements() != outputs[i].num_elements()) {
      throw Error(describe(OpType::kAllreduce, names[i]) + ": output " + to_string(outputs[i].dtype) +
                  runtime::shape_string(outputs[i].shape) + " does not match input " + to_string(inputs[i].dtype) +
                  runtime::shape_string(inputs[i].shape));
    }
    if (outputs[i].device != inputs[i].device) {
      throw Error(describe(OpType::kAllreduce, names[i]) + ": output is on " + to_string(outputs[i].device) +
                  " but input on " + to_string(inputs[i].device));
    }
    if (inputs[i].device.type != inputs[0].device.type) {
      throw Error(describe(OpType::kAllreduce, names[i]) +
                  ": a group's tensors must all be on the CPU or all on CUDA ('" + names[0] + "' is on " +
                  to_string(inputs[0].device) + ", this one on " + to_string(inputs[i].device) + ")");
    }
    check_scaling(OpType::kAllreduce, names[i], inputs[i].dtype, options);
    TensorEntry entry = make_entry(target, OpType::kAllreduce, names[i], inputs[i], outputs[i], state);
    entry.request.reduce_op = options.op;
    entry.request.prescale = options.prescale_factor;
    entry.request.postscale = options.postscale_factor;
    if (names.size() > 1) {
      entry.request.group = names.front();
      entry.request.group_size = static_cast<std::int32_t>(names.size());
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

TensorEntry allgather_entry(const Target& target, const std::string& name, const TensorView& input,
                            OutputAllocator allocate) {
  check_name(OpType::kAllgather, name);
  check_view(OpType::kAllgather, name, input, "input");
  if (input.shape.empty()) throw Error(describe(OpType::kAllgather, name) + ": needs at least one dimension");
  TensorEntry entry = make_entry(target, OpType::kAllgather, name, input, {}, std::make_shared<detail::OpState>());
  entry.allocate = std::move(allocate);
  return entry;
}

// `root` is a job rank (Horovod's convention, process sets included); the request carries its
// place in the set.
TensorEntry broadcast_entry(const Target& target, const std::string& name, const TensorView& tensor, int root,
                            const ProcessSet& set) {
  check_name(OpType::kBroadcast, name);
  check_view(OpType::kBroadcast, name, tensor, "tensor");
  int root_in_set = root;
  if (set.is_global() && (root < 0 || root >= target.size)) {
    throw Error(describe(OpType::kBroadcast, name) + ": root rank " + std::to_string(root) + " is outside 0.." +
                std::to_string(target.size - 1));
  }
  if (!set.is_global()) {
    const std::vector<int> members = set.ranks();
    const auto place = std::find(members.begin(), members.end(), root);
    if (place == members.end()) {
      throw Error(describe(OpType::kBroadcast, name) + ": root rank " + std::to_string(root) + " is not in " +
                  set.describe());
    }
    root_in_set = static_cast<int>(place - members.begin());
  }
  TensorEntry entry = make_entry(target, OpType::kBroadcast, name, tensor, tensor, std::make_shared<detail::OpState>());
  entry.request.root = root_in_set;
  return entry;
}

TensorEntry alltoall_entry(const Target& target, const std::string& name, const TensorView& input,
                           std::vector<std::int64_t> splits, OutputAllocator allocate) {
  check_name(OpType::kAlltoall, name);
  check_view(OpType::kAlltoall, name, input, "input");
  if (input.shape.empty()) throw Error(describe(OpType::kAlltoall, name) + ": needs at least one dimension");
  const int world = target.size;
  const std::int64_t rows = input.shape[0];
  if (splits.empty()) {
    if (rows % world != 0) {
      throw Error(describe(OpType::kAlltoall, name) + ": first dimension " + std::to_string(rows) +
                  " is not divisible by the " + std::to_string(world) + " ranks; pass explicit splits");
    }
    splits.assign(world, rows / world);
  }
  if (static_cast<int>(splits.size()) != world) {
    throw Error(describe(OpType::kAlltoall, name) + ": splits has " + std::to_string(splits.size()) +
                " entries but there are " + std::to_string(world) + " ranks");
  }
  std::int64_t total = 0;
  for (auto s : splits) {
    if (s < 0)
      throw Error(describe(OpType::kAlltoall, name) + ": splits " + runtime::shape_string(splits) +
                  " has a negative entry");
    total += s;
  }
  if (total != rows) {
    throw Error(describe(OpType::kAlltoall, name) + ": splits " + runtime::shape_string(splits) + " add up to " +
                std::to_string(total) + " but the first dimension is " + std::to_string(rows));
  }
  TensorEntry entry = make_entry(target, OpType::kAlltoall, name, input, {}, std::make_shared<detail::OpState>());
  entry.request.splits = std::move(splits);
  entry.allocate = std::move(allocate);
  return entry;
}

TensorEntry reducescatter_entry(const Target& target, const std::string& name, const TensorView& input,
                                const ReduceOptions& options, OutputAllocator allocate) {
  check_name(OpType::kReducescatter, name);
  check_view(OpType::kReducescatter, name, input, "input");
  if (input.shape.empty()) throw Error(describe(OpType::kReducescatter, name) + ": needs at least one dimension");
  check_scaling(OpType::kReducescatter, name, input.dtype, options);
  TensorEntry entry = make_entry(target, OpType::kReducescatter, name, input, {}, std::make_shared<detail::OpState>());
  entry.request.reduce_op = options.op;
  entry.request.prescale = options.prescale_factor;
  entry.request.postscale = options.postscale_factor;
  entry.allocate = std::move(allocate);
  return entry;
}

constexpr bool kAsync = false;    // the caller goes on and waits later, if ever
constexpr bool kBlocking = true;  // the caller waits next

}  // namespace

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const ReduceOptions& options, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllreduce, name);
  return submit_entries(target, allreduce_entries(target, {&name, 1}, {&input, 1}, {&output, 1}, options), kAsync);
}

void allreduce(const std::string& name, const TensorView& input, const TensorView& output, const ReduceOptions& options,
               const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllreduce, name);
  submit_entries(target, allreduce_entries(target, {&name, 1}, {&input, 1}, {&output, 1}, options), kBlocking).wait();
}

Handle grouped_allreduce_async(const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                               const std::vector<TensorView>& outputs, const ReduceOptions& options,
                               const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllreduce, names.empty() ? "" : names.front());
  return submit_entries(target, allreduce_entries(target, names, inputs, outputs, options), kAsync);
}

void grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                       const std::vector<TensorView>& outputs, const ReduceOptions& options,
                       const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllreduce, names.empty() ? "" : names.front());
  submit_entries(target, allreduce_entries(target, names, inputs, outputs, options), kBlocking).wait();
}

Handle allgather_async(const std::string& name, const TensorView& input, OutputAllocator allocate,
                       const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllgather, name);
  return submit_one(target, allgather_entry(target, name, input, std::move(allocate)), kAsync);
}

CollectiveResult allgather(const std::string& name, const TensorView& input, OutputAllocator allocate,
                           const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAllgather, name);
  return CollectiveResult(submit_one(target, allgather_entry(target, name, input, std::move(allocate)), kBlocking));
}

Handle broadcast_async(const std::string& name, const TensorView& tensor, int root, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kBroadcast, name);
  return submit_one(target, broadcast_entry(target, name, tensor, root, process_set), kAsync);
}

void broadcast(const std::string& name, const TensorView& tensor, int root, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kBroadcast, name);
  submit_one(target, broadcast_entry(target, name, tensor, root, process_set), kBlocking).wait();
}

Handle alltoall_async(const std::string& name, const TensorView& input, std::vector<std::int64_t> splits,
                      OutputAllocator allocate, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAlltoall, name);
  return submit_one(target, alltoall_entry(target, name, input, std::move(splits), std::move(allocate)), kAsync);
}

CollectiveResult alltoall(const std::string& name, const TensorView& input, std::vector<std::int64_t> splits,
                          OutputAllocator allocate, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kAlltoall, name);
  return CollectiveResult(
      submit_one(target, alltoall_entry(target, name, input, std::move(splits), std::move(allocate)), kBlocking));
}

Handle reducescatter_async(const std::string& name, const TensorView& input, const ReduceOptions& options,
                           OutputAllocator allocate, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kReducescatter, name);
  return submit_one(target, reducescatter_entry(target, name, input, options, std::move(allocate)), kAsync);
}

CollectiveResult reducescatter(const std::string& name, const TensorView& input, const ReduceOptions& options,
                               OutputAllocator allocate, const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kReducescatter, name);
  return CollectiveResult(
      submit_one(target, reducescatter_entry(target, name, input, options, std::move(allocate)), kBlocking));
}

namespace runtime {
CollectiveResult allgather_reserved(const std::string& name, const TensorView& input) {
  const Target target = target_of(ProcessSet(), OpType::kAllgather, name);
  return CollectiveResult(submit_one(
      target, make_entry(target, OpType::kAllgather, name, input, {}, std::make_shared<detail::OpState>()), kBlocking));
}
}  // namespace runtime

void barrier(const ProcessSet& process_set) {
  const Target target = target_of(process_set, OpType::kBarrier, runtime::kBarrierName);
  submit_one(target,
             make_entry(target, OpType::kBarrier, runtime::kBarrierName, TensorView{nullptr, DataType::kUInt8, {0}}, {},
                        std::make_shared<detail::OpState>()),
             kBlocking)
      .wait();
}

int join() {
  const Target target = target_of(ProcessSet(), OpType::kJoin, runtime::kJoinName);
  Handle h = submit_one(target,
                        make_entry(target, OpType::kJoin, runtime::kJoinName,
                                   TensorView{nullptr, DataType::kUInt8, {0}}, {}, std::make_shared<detail::OpState>()),
                        kBlocking);
  return h.last_joined_rank();
}

}  // namespace dtrain
