// dtrain: the framework-agnostic collective runtime.
//
// A process calls dtrain::init() once (the `dtrain run` launcher provides rank, size and
// rendezvous through the environment; a process started alone is a world of size 1), then
// submits named collectives on plain memory described by TensorView. Every operation has an
// asynchronous form returning a Handle and a blocking form that waits on it and returns the
// result (a CollectiveResult for allgather, alltoall and reducescatter). A background thread
// negotiates which names are ready on every rank, so ranks may submit in different orders;
// any disagreement between ranks (dtype, shape, op, root, ...) fails that operation on every
// rank with one message naming the tensor and the ranks that differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "dtrain/error.h"

namespace dtrain {

enum class DataType : std::uint8_t { kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };

std::size_t element_size(DataType dtype);
const char* to_string(DataType dtype);
bool is_floating_point(DataType dtype);

enum class ReduceOp : std::uint8_t { kSum, kAverage, kMin, kMax, kProduct };
const char* to_string(ReduceOp op);

// Where a tensor's memory is. CUDA memory needs a build with DTRAIN_CUDA (see cuda_built()).
enum class DeviceType : std::uint8_t { kCPU, kCUDA };
const char* to_string(DeviceType type);

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // the CUDA device ordinal; 0 for the CPU

  bool is_cuda() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device& other) const { return type == other.type && index == other.index; }
  bool operator!=(const Device& other) const { return !(*this == other); }
};
std::string to_string(const Device& device);  // "cpu", "cuda:1"

// A non-owning view of a dense, row-major buffer.
//
// CUDA memory is ordered by streams, as in Horovod and PyTorch: the runtime reads an input
// once `ready_event` has completed (a cudaEvent_t recorded after the producer's writes), or
// without one, once the work queued on `cuda_stream` when the operation was submitted has;
// and completing the operation orders its result before any work queued on `cuda_stream`
// afterwards (the stream waits for the runtime's own event; the CPU is not blocked). A
// null `cuda_stream` is the legacy default stream. The handles are opaque here so that
// this header needs no CUDA headers; both must belong to `device`.
struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<std::int64_t> shape;
  Device device = {};
  void* cuda_stream = nullptr;  // cudaStream_t
  void* ready_event = nullptr;  // cudaEvent_t, optional

  std::int64_t num_elements() const;
  std::size_t num_bytes() const { return static_cast<std::size_t>(num_elements()) * element_size(dtype); }
};

// For operations whose output shape is only known after negotiation (allgather, alltoall,
// reducescatter): returns memory for a tensor of `shape` and the operation's dtype, which the
// caller owns (e.g. a framework tensor). Without one the runtime owns the output's memory,
// which lives as long as the operation's Handle or CollectiveResult (or a copy of either).
using OutputAllocator = std::function<void*(const std::vector<std::int64_t>& shape)>;

struct ReduceOptions {
  ReduceOp op = ReduceOp::kAverage;
  double prescale_factor = 1.0;   // multiplied into every contribution before the reduction
  double postscale_factor = 1.0;  // multiplied into the result (after averaging)
};

enum class Status { kPending, kDone, kFailed };

namespace detail {
struct OpState;
struct ProcessSetState;
}  // namespace detail

// The completion of one submitted operation (or one group). Cheap to copy.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<detail::OpState> state) : state_(std::move(state)) {}

  bool poll() const;  // true once the operation finished, successfully or not
  // Blocks until finished; throws dtrain::Error if it failed. On CUDA tensors "finished"
  // means ordered: the result is queued before later work on the tensors' cuda_stream.
  void wait() const;
  // Blocks until finished, successfully or not, leaving the negotiation to the background
  // thread (wait() runs it on the calling thread); throws nothing. For threads that only
  // collect what others started.
  void wait_finished() const;
  Status status() const;
  std::string error() const;  // empty unless failed

  // Results, valid after a successful wait():
  TensorView output() const;                                 // allgather, alltoall, reducescatter
  const std::vector<std::int64_t>& received_splits() const;  // allgather, alltoall: rows from each rank
  int last_joined_rank() const;                              // join

 private:
  std::shared_ptr<detail::OpState> state_;
};

// What a blocking allgather, alltoall or reducescatter returns: the finished operation's
// output. Holds the operation, so memory the runtime allocated for the output (no
// OutputAllocator given) stays valid as long as this result or a copy of it. Cheap to copy.
class CollectiveResult {
 public:
  // Waits for `operation` (an allgather, alltoall or reducescatter); throws dtrain::Error if
  // it failed. The blocking forms build their result this way; so may a caller of _async.
  explicit CollectiveResult(Handle operation);

  const TensorView& output() const { return output_; }
  // allgather and alltoall: the rows received from each rank. Empty for reducescatter.
  const std::vector<std::int64_t>& received_splits() const { return operation_.received_splits(); }

 private:
  Handle operation_;
  TensorView output_;
};

// Whether this build can run collectives on CUDA memory (configured with DTRAIN_CUDA and
// CUDA and NCCL found). Whether a GPU is present is a separate question, answered at the
// first CUDA operation.
bool cuda_built();

// Lifecycle. init() may be called again after shutdown(). It sets SIGPIPE to be ignored
// unless the program has its own disposition for it: a write to the socket of a peer that
// died then fails, and the operation ends in WorkersLostError, instead of this rank dying too.
void init();
// A world of one: rank 0 of size 1 whatever the launcher's environment says, meeting no one
// (the knobs still apply; log lines keep the launcher's rank). For processes whose peers
// are reached some other way, such as parameter-server workers: collectives inside their
// model (loss normalisation, SyncBN, evaluation) then stay local.
void init_alone();
// A world whose processes someone else started and numbered (PyTorch's init_process_group
// under torchrun, or with a store of its own): the ranks agree on a rendezvous store some
// other way (rank 0 serves one with serve_rendezvous() and passes its port on), then meet
// there as ranks of `dtrain run` meet at the launcher's. Engines and knobs come from the
// DTRAIN_* variables as for init(); `timeout` bounds connecting and, unless
// DTRAIN_STALL_SHUTDOWN_S says otherwise, how long an operation may wait for a peer.
struct ExternalWorld {
  int rank = 0;
  int size = 1;
  std::string rendezvous_host;  // where serve_rendezvous() runs, as the other ranks reach it
  int rendezvous_port = 0;
  std::string token;  // the same on every rank; the store refuses other tokens
  std::string job_id = "torch";
  double timeout_s = 300;
};
void init(const ExternalWorld& world);
// Serves a rendezvous store for `size` ranks on an ephemeral port of every interface of this
// host, for the rest of the process's life; returns the port. One store per process: a
// second call returns the first store's port.
int serve_rendezvous(const std::string& token, int size);
void shutdown();
bool is_initialized();

int rank();
int size();
int local_rank();
int local_size();
int cross_rank();
int cross_size();

// Where a process sits in the job: its rank among all, among its host's ranks (local) and
// its host among the hosts (cross).
struct Placement {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
};

// This process's placement as the launcher set it (DTRAIN_RANK, DTRAIN_SIZE, DTRAIN_LOCAL_*,
// DTRAIN_CROSS_*; OMPI_COMM_WORLD_* under a bare mpirun), checked as init() checks its
// environment (a malformed or inconsistent value is an Error naming the variable), without
// starting the runtime; a process started without a launcher is a world of one. For processes
// that do not meet their peers through the runtime, such as parameter-server workers after
// init_alone(). Under init(), rank(), local_size(), ... are the ones to use: the runtime
// groups ranks by host itself, so its local and cross values may differ from the launcher's.
Placement placement_from_environment();

// ---- process sets ----
//
// A subset of the job's ranks whose collectives run among themselves (Horovod's process sets,
// PyTorch's new_group). Each set negotiates, fuses and caches on its own, with a background
// thread and connections of its own, so operations on different sets (disjoint or nested)
// run at the same time, and the global set, every rank of the job, is the default and works
// as without sets. Its members are the job's ranks, in ascending order; a member's place in
// that order is its rank in the set (the order of allgather's rows, alltoall's splits, one
// per member). Roots (broadcast, broadcast_object) are job ranks, as in Horovod. An operation
// on a set this rank is not a member of, or on a removed one, is an Error on this rank. Sets
// end with shutdown(); an elastic job adds them again after a reset.
class ProcessSet {
 public:
  ProcessSet() = default;  // the global set

  bool is_global() const { return !state_; }
  std::string name() const;        // "global", or the set's number ("1", "2", ...) or key
  std::vector<int> ranks() const;  // the members' job ranks, ascending
  bool included() const;           // this process is a member
  int rank() const;                // this process's rank in the set; -1 when not a member
  int size() const;
  std::string describe() const;  // "process set 1 (ranks 0,2)"

  // The set's state (internal).
  const std::shared_ptr<detail::ProcessSetState>& state() const { return state_; }
  explicit ProcessSet(std::shared_ptr<detail::ProcessSetState> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::ProcessSetState> state_;
};

// Horovod's add_process_set: collective over every rank of the job, which pass the same
// ranks (in any order; sets are added in the same order everywhere) and number the set alike
// (1, 2, ...). Only the members connect. Throws on every rank when the ranks are empty, out of
// range, repeated or differ between ranks, or when a set of these ranks exists already.
ProcessSet add_process_set(std::vector<int> ranks);
// A set that only its members create (PyTorch's new_group, where the others never call it):
// collective over `ranks` alone, which all pass the same `key`, unique in the job.
ProcessSet connect_process_set(const std::string& key, std::vector<int> ranks);
// Ends this rank's part in `set`: its members stop its thread together (an operation a member
// still has in flight on it fails); later operations on it are errors. For a set made by
// add_process_set every rank calls it, as Horovod's remove_process_set; non-members just
// forget the set. The global set cannot be removed.
void remove_process_set(const ProcessSet& set);

// Allreduce of `input` into `output` (may be the same buffer). Shapes and dtypes must match.
Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const ReduceOptions& options = {}, const ProcessSet& process_set = {});
void allreduce(const std::string& name, const TensorView& input, const TensorView& output,
               const ReduceOptions& options = {}, const ProcessSet& process_set = {});

// Several allreduces negotiated and reduced as one unit; one handle for all.
Handle grouped_allreduce_async(const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                               const std::vector<TensorView>& outputs, const ReduceOptions& options = {},
                               const ProcessSet& process_set = {});
void grouped_allreduce(const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                       const std::vector<TensorView>& outputs, const ReduceOptions& options = {},
                       const ProcessSet& process_set = {});

// Concatenation along the first dimension; ranks may differ in the first dimension only.
Handle allgather_async(const std::string& name, const TensorView& input, OutputAllocator allocate = {},
                       const ProcessSet& process_set = {});
CollectiveResult allgather(const std::string& name, const TensorView& input, OutputAllocator allocate = {},
                           const ProcessSet& process_set = {});

// In place: `tensor` on `root` is copied into `tensor` on every other rank.
Handle broadcast_async(const std::string& name, const TensorView& tensor, int root, const ProcessSet& process_set = {});
void broadcast(const std::string& name, const TensorView& tensor, int root, const ProcessSet& process_set = {});

// Rank r sends rows [sum(splits[:j]), sum(splits[:j+1])) of its first dimension to rank j.
// Empty splits: the first dimension divided evenly (it must be divisible by size()).
Handle alltoall_async(const std::string& name, const TensorView& input, std::vector<std::int64_t> splits = {},
                      OutputAllocator allocate = {}, const ProcessSet& process_set = {});
CollectiveResult alltoall(const std::string& name, const TensorView& input, std::vector<std::int64_t> splits = {},
                          OutputAllocator allocate = {}, const ProcessSet& process_set = {});

// Reduces across ranks, then rank r keeps its share of the first dimension: first/size rows,
// the first (first % size) ranks one more.
Handle reducescatter_async(const std::string& name, const TensorView& input, const ReduceOptions& options = {},
                           OutputAllocator allocate = {}, const ProcessSet& process_set = {});
CollectiveResult reducescatter(const std::string& name, const TensorView& input, const ReduceOptions& options = {},
                               OutputAllocator allocate = {}, const ProcessSet& process_set = {});

// Bytes rather than tensors, for what is not a tensor: a serialised config, a dataset index,
// a vocabulary. Negotiated like the other collectives (the name, and the root for broadcast,
// must agree on every rank).
// `bytes` on `root` returned on every rank (the others' `bytes` are ignored).
std::string broadcast_object(const std::string& bytes, int root, const std::string& name,
                             const ProcessSet& process_set = {});
// Every rank's bytes, in rank order; their lengths may differ.
std::vector<std::string> allgather_object(const std::string& bytes, const std::string& name,
                                          const ProcessSet& process_set = {});

void barrier(const ProcessSet& process_set = {});

// Declares this rank out of data (the global set only). Until every rank has joined, this rank's background thread
// keeps serving the others' allreduces with zeros (Sum and Average only). Returns the rank that
// joined last.
int join();

// The timeline (Chrome-trace JSON of negotiation, queueing and communication, as
// DTRAIN_TIMELINE writes from the start) for a part of the run only: e.g. a few steady-state
// steps. Rank 0 writes it; on other ranks these calls do nothing, so every rank may call
// them. start_timeline() replaces a timeline being written (which is closed complete);
// `mark_cycles` adds a CYCLE_START marker at each negotiation cycle that had work (idle
// cycles are left out: they come every few milliseconds). Both take effect between two
// cycles and return once they have: after stop_timeline() the file is complete, valid JSON.
// Operations in flight at a start or stop appear with the phases that fall inside.
void start_timeline(const std::string& path, bool mark_cycles = false);
void stop_timeline();

}  // namespace dtrain
