#include "runtime/gpu/nccl_engine.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "runtime/collective_layout.h"
#include "runtime/gpu/cuda_check.h"
#include "runtime/gpu/device_kernels.h"
#include "runtime/op_executor.h"
#include "runtime/reduction.h"

namespace dtrain::runtime {
namespace {

ncclDataType_t nccl_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
  }
  return ncclUint8;
}

// Average is a Sum followed by the engine's own division (which also applies the postscale
// in the same pass, and divides integers as the host path does).
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return ncclSum;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kProduct: return ncclProd;
  }
  return ncclSum;
}

template <typename T>
bool all_equal(const std::vector<T>& values) {
  return std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) == values.end();
}

std::byte* at(void* base, std::size_t offset) { return static_cast<std::byte*>(base) + offset; }
const std::byte* at(const void* base, std::size_t offset) { return static_cast<const std::byte*>(base) + offset; }

}  // namespace

NcclEngine::NcclEngine(Transport& transport, int device, std::chrono::milliseconds timeout)
    : rank_(transport.rank()), size_(transport.size()), device_(device), timeout_(timeout) {
  // Rank 0 makes the communicator's id; every rank takes part in sending it, even when
  // making it failed, so that all of them fail together instead of some waiting.
  struct {
    ncclUniqueId id;
    bool made;
  } offer{};
  if (rank_ == 0) offer.made = ncclGetUniqueId(&offer.id) == ncclSuccess;
  transport.broadcast(&offer, sizeof(offer), 0);
  if (!offer.made) {
    throw Error(
        "dtrain: NCCL could not make a communicator id on rank 0 (ncclGetUniqueId failed; NCCL_DEBUG=WARN says why)");
  }
  const ncclUniqueId id = offer.id;
  gpu::DeviceScope scope(device_);
  cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cuda(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  nccl(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config), "ncclCommInitRankConfig");
}

NcclEngine::~NcclEngine() {
  int previous_device = device_;
  cudaGetDevice(&previous_device);  // the thread that shuts down keeps its device
  cudaSetDevice(device_);
  if (comm_) {
    // Let queued work finish, unless it cannot (a peer gone, an error): then abort. Bounded
    // well under the job's timeout, since the peers are shutting down at the same time.
    const auto deadline =
        std::chrono::steady_clock::now() + std::min<std::chrono::milliseconds>(timeout_, std::chrono::seconds(30));
    bool drained = false;
    while (std::chrono::steady_clock::now() < deadline) {
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress) break;
      const cudaError_t query = cudaStreamQuery(stream_);
      if (query == cudaSuccess) {
        drained = true;
        break;
      }
      if (query != cudaErrorNotReady) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    bool finalized = false;
    if (drained && ncclCommFinalize(comm_) != ncclSystemError) {
      ncclResult_t state = ncclInProgress;
      while (state == ncclInProgress && std::chrono::steady_clock::now() < deadline) {
        ncclCommGetAsyncError(comm_, &state);
        if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      finalized = state == ncclSuccess;
    }
    if (finalized) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }
  if (scratch_) cudaFreeAsync(scratch_, stream_);
  if (done_) cudaEventDestroy(done_);
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  cudaSetDevice(previous_device);
}

std::string NcclEngine::where() const {
  return "rank " + std::to_string(rank_) + " (cuda:" + std::to_string(device_) + ")";
}

void NcclEngine::fail(const std::string& what) {
  if (comm_) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
  }
  broken_ = "dtrain: NCCL on " + where() + ": " + what;
  throw Error(broken_);
}

void NcclEngine::cuda(cudaError_t result, const char* call) {
  if (result != cudaSuccess) fail(std::string(call) + " failed: " + cudaGetErrorString(result));
}

void NcclEngine::nccl(ncclResult_t result, const char* call) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (result == ncclInProgress) {
    if (std::chrono::steady_clock::now() > deadline) {
      fail(std::string(call) + " did not complete within " + std::to_string(timeout_.count() / 1000) +
           " s (DTRAIN_TIMEOUT_S): a peer may be gone or stuck");
    }
    std::this_thread::yield();
    ncclCommGetAsyncError(comm_, &result);
  }
  if (result != ncclSuccess) {
    const char* detail = comm_ ? ncclGetLastError(comm_) : nullptr;
    fail(std::string(call) + " failed: " + ncclGetErrorString(result) +
         (detail && *detail ? std::string(" (") + detail + ")" : std::string()));
  }
}

void NcclEngine::check_health() {
  if (!broken_.empty()) throw Error(broken_);
  if (!comm_) return;
  ncclResult_t state = ncclSuccess;
  ncclCommGetAsyncError(comm_, &state);
  if (state != ncclSuccess && state != ncclInProgress) nccl(state, "a queued collective");
  const cudaError_t query = cudaStreamQuery(stream_);
  if (query != cudaSuccess && query != cudaErrorNotReady) cuda(query, "a queued collective");
}

void* NcclEngine::scratch(std::size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  // Stream-ordered: the old buffer goes once the work queued on it is done.
  if (scratch_) cuda(cudaFreeAsync(scratch_, stream_), "cudaFreeAsync");
  scratch_ = nullptr;
  scratch_bytes_ = 0;
  cuda(cudaMallocAsync(&scratch_, bytes, stream_), "cudaMallocAsync");
  scratch_bytes_ = bytes;
  return scratch_;
}

void NcclEngine::execute(const Response& response, std::vector<TensorEntry*>& tensors) {
  if (!broken_.empty()) throw Error(broken_);
  gpu::DeviceScope scope(device_);
  for (TensorEntry* t : tensors) {
    if (t && t->ready)
      cuda(cudaStreamWaitEvent(stream_, static_cast<cudaEvent_t>(t->ready.get()), 0), "cudaStreamWaitEvent");
  }
  switch (response.type) {
    case OpType::kAllreduce: allreduce(response, tensors); break;
    case OpType::kAllgather: allgather(response, *tensors[0]); break;
    case OpType::kBroadcast: broadcast(response, *tensors[0]); break;
    case OpType::kAlltoall: alltoall(response, *tensors[0]); break;
    case OpType::kReducescatter: reducescatter(response, *tensors[0]); break;
    case OpType::kBarrier:
    case OpType::kJoin: throw Error("dtrain: internal error: a " + std::string(to_string(response.type)) + " on CUDA");
  }
  // The callers' streams wait for the results; the CPU goes on.
  cuda(cudaEventRecord(done_, stream_), "cudaEventRecord");
  for (TensorEntry* t : tensors) {
    if (t) cuda(cudaStreamWaitEvent(static_cast<cudaStream_t>(t->input.cuda_stream), done_, 0), "cudaStreamWaitEvent");
  }
}

void NcclEngine::finish_reduction(const Response& response, void* data, std::size_t count) {
  const double factor = result_scale(response.dtype, response.reduce_op, size_, response.postscale);
  gpu::scale(response.dtype, data, count, factor, stream_);
  if (!is_floating_point(response.dtype) && response.reduce_op == ReduceOp::kAverage) {
    gpu::divide_integers(response.dtype, data, count, size_, stream_);
  }
}

void NcclEngine::allreduce(const Response& response, std::vector<TensorEntry*>& tensors) {
  const DataType dtype = response.dtype;
  const std::size_t esize = element_size(dtype);
  const auto total =
      static_cast<std::size_t>(std::accumulate(response.sizes.begin(), response.sizes.end(), std::int64_t{0}));
  void* buffer = nullptr;
  const bool fused = tensors.size() > 1;
  if (!fused && tensors[0]) {
    // One tensor: reduced in its output, in place.
    TensorEntry& t = *tensors[0];
    buffer = t.output.data;
    if (t.input.data != t.output.data && total) {
      cuda(cudaMemcpyAsync(buffer, t.input.data, total * esize, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    }
  } else {
    // Several tensors (or this rank's zeros, having joined): packed into the fusion buffer.
    buffer = scratch(total * esize);
    std::vector<gpu::CopyPiece> pieces;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const std::size_t bytes = static_cast<std::size_t>(response.sizes[i]) * esize;
      pieces.push_back({tensors[i] ? tensors[i]->input.data : nullptr, at(buffer, offset), bytes});
      offset += bytes;
    }
    gpu::batched_copy(pieces, stream_);
  }
  if (total == 0) return;
  gpu::scale(dtype, buffer, total, response.prescale, stream_);
  nccl(ncclAllReduce(buffer, buffer, total, nccl_type(dtype), nccl_op(response.reduce_op), comm_, stream_),
       "ncclAllReduce");
  finish_reduction(response, buffer, total);
  if (!fused) return;
  std::vector<gpu::CopyPiece> pieces;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::size_t bytes = static_cast<std::size_t>(response.sizes[i]) * esize;
    if (tensors[i]) pieces.push_back({at(buffer, offset), tensors[i]->output.data, bytes});
    offset += bytes;
  }
  gpu::batched_copy(pieces, stream_);
}

void NcclEngine::allgather(const Response& response, TensorEntry& entry) {
  const AllgatherLayout layout = allgather_layout(response, entry.input);
  void* out = allocate_output(entry, layout.output_shape);
  entry.state->received_splits = response.sizes;
  if (layout.offsets.back() + layout.bytes.back() == 0) return;
  if (all_equal(layout.bytes)) {
    nccl(ncclAllGather(entry.input.data, out, layout.bytes[0], ncclUint8, comm_, stream_), "ncclAllGather");
    return;
  }
  // Ranks with different first dimensions: each rank's rows broadcast from it, in one group.
  nccl(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < size_; ++r) {
    if (layout.bytes[r] == 0) continue;
    void* rows = at(out, layout.offsets[r]);
    const void* send = r == rank_ ? entry.input.data : rows;
    nccl(ncclBroadcast(send, rows, layout.bytes[r], ncclUint8, r, comm_, stream_), "ncclBroadcast");
  }
  nccl(ncclGroupEnd(), "ncclGroupEnd (allgather)");
}

void NcclEngine::broadcast(const Response& response, TensorEntry& entry) {
  const std::size_t bytes = entry.output.num_bytes();
  if (bytes == 0) return;
  nccl(ncclBroadcast(entry.output.data, entry.output.data, bytes, ncclUint8, response.root, comm_, stream_),
       "ncclBroadcast");
}

void NcclEngine::alltoall(const Response& response, TensorEntry& entry) {
  const AlltoallLayout layout = alltoall_layout(response, entry.input, rank_, size_);
  void* out = allocate_output(entry, layout.output_shape);
  entry.state->received_splits = layout.received_rows;
  std::size_t send_offset = 0, receive_offset = 0;
  nccl(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < size_; ++r) {
    if (layout.send_bytes[r]) {
      nccl(ncclSend(at(entry.input.data, send_offset), layout.send_bytes[r], ncclUint8, r, comm_, stream_), "ncclSend");
    }
    if (layout.receive_bytes[r]) {
      nccl(ncclRecv(at(out, receive_offset), layout.receive_bytes[r], ncclUint8, r, comm_, stream_), "ncclRecv");
    }
    send_offset += layout.send_bytes[r];
    receive_offset += layout.receive_bytes[r];
  }
  nccl(ncclGroupEnd(), "ncclGroupEnd (alltoall)");
}

void NcclEngine::reducescatter(const Response& response, TensorEntry& entry) {
  const DataType dtype = response.dtype;
  const std::size_t esize = element_size(dtype);
  const ReducescatterLayout layout = reducescatter_layout(entry.input, rank_, size_);
  const std::size_t total = layout.offsets.back() + layout.counts.back();
  const void* send = entry.input.data;
  if (response.prescale != 1.0 && total) {
    void* scaled = scratch(total * esize);
    cuda(cudaMemcpyAsync(scaled, send, total * esize, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
    gpu::scale(dtype, scaled, total, response.prescale, stream_);
    send = scaled;
  }
  void* out = allocate_output(entry, layout.output_shape);
  if (total == 0) return;
  const ncclDataType_t type = nccl_type(dtype);
  const ncclRedOp_t op = nccl_op(response.reduce_op);
  if (all_equal(layout.counts)) {
    nccl(ncclReduceScatter(send, out, layout.counts[0], type, op, comm_, stream_), "ncclReduceScatter");
  } else {
    // Uneven shares: each rank's share reduced to it, in one group.
    nccl(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size_; ++r) {
      if (layout.counts[r] == 0) continue;
      const std::byte* share = at(send, layout.offsets[r] * esize);
      void* receive = r == rank_ ? out : const_cast<std::byte*>(share);  // read at the root only
      nccl(ncclReduce(share, receive, layout.counts[r], type, op, r, comm_, stream_), "ncclReduce");
    }
    nccl(ncclGroupEnd(), "ncclGroupEnd (reducescatter)");
  }
  finish_reduction(response, out, layout.counts[rank_]);
}

}  // namespace dtrain::runtime
