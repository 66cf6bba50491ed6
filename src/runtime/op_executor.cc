#include "runtime/op_executor.h"

#include <cstring>
#include <numeric>

#include "runtime/collective_layout.h"
#include "runtime/gpu/device_memory.h"
#include "runtime/reduction.h"

namespace dtrain::runtime {

void* allocate_output(TensorEntry& entry, const std::vector<std::int64_t>& shape) {
  auto& state = *entry.state;
  TensorView out;
  out.dtype = entry.request.dtype;
  out.shape = shape;
  out.device = entry.input.device;
  out.cuda_stream = entry.input.cuda_stream;
  const std::size_t bytes = out.num_bytes();
  if (entry.allocate) {
    out.data = entry.allocate(shape);
    if (!out.data && bytes) throw Error("dtrain: the output allocator returned null for '" + entry.request.name + "'");
  } else if (out.device.is_cuda()) {
    state.owned_device_output = gpu::allocate(out.device, bytes);
    out.data = state.owned_device_output.get();
  } else {
    state.owned_output.resize(bytes);
    out.data = state.owned_output.data();
  }
  state.output = out;
  return out.data;
}

void OpExecutor::note_started(const std::vector<TensorEntry*>& tensors) {
  if (!recorder_) return;
  for (const TensorEntry* t : tensors) {
    if (t) recorder_->started(t->record);
  }
}

void OpExecutor::note_finished(const std::vector<TensorEntry*>& tensors, bool ok) {
  if (!recorder_) return;
  for (const TensorEntry* t : tensors) {
    if (t) recorder_->finished(t->record, ok);
  }
}

void OpExecutor::activity_begin(const Response& response, const char* activity) {
  if (!timeline_) return;
  for (const auto& name : response.names) timeline_->begin(name, activity);
}

void OpExecutor::activity_end(const Response& response) {
  if (!timeline_) return;
  for (const auto& name : response.names) timeline_->end(name);
}

void OpExecutor::execute(const Response& response, std::unordered_map<std::string, TensorEntry>& entries,
                         const std::vector<std::span<const char>>* ridden) {
  std::vector<TensorEntry*> tensors;
  for (const auto& name : response.names) {
    auto it = entries.find(name);
    // A rank that has joined has no entry for others' allreduces; it contributes zeros.
    tensors.push_back(it == entries.end() ? nullptr : &it->second);
  }
  // Handles complete after their entries leave `entries`, so keep the states alive here.
  std::vector<std::shared_ptr<detail::OpState>> states;
  auto finish = [&] {
    for (TensorEntry* t : tensors) {
      if (t) states.push_back(t->state);
    }
    for (const auto& name : response.names) {
      if (entries.erase(name)) release_(name);
    }
  };

  if (!response.ok()) {
    note_finished(tensors, false);
    finish();
    for (auto& state : states) state->fail(response.error);
    return;
  }
  if ((response.type != OpType::kAllreduce && response.type != OpType::kBarrier) || ridden) {
    if (!tensors[0]) {
      throw Error("dtrain: planned " + std::string(to_string(response.type)) + " '" + response.names[0] +
                  "' that this rank never submitted (ranks out of sync)");
    }
  }
  if (timeline_) {
    for (TensorEntry* t : tensors) {
      if (t) timeline_->span(t->request.name, "QUEUE", t->submitted, std::chrono::steady_clock::now());
    }
  }

  note_started(tensors);
  if (timeline_) activity_begin(response, activity_name(response.type).c_str());  // the name costs an allocation
  try {
    if (ridden) {
      reduce_ridden(response, *tensors[0], *ridden);
    } else if (response.device == DeviceType::kCUDA) {
      run_on_device(response, tensors);
    } else {
      run_on_host(response, tensors);
    }
  } catch (...) {
    activity_end(response);
    throw;
  }
  activity_end(response);
  note_finished(tensors, true);
  finish();
  for (auto& state : states) state->complete_one();
}

void OpExecutor::run_on_host(const Response& response, std::vector<TensorEntry*>& tensors) {
  switch (response.type) {
    case OpType::kAllreduce: allreduce(response, tensors); break;
    case OpType::kAllgather: allgather(response, *tensors[0]); break;
    case OpType::kBroadcast: broadcast(response, *tensors[0]); break;
    case OpType::kAlltoall: alltoall(response, *tensors[0]); break;
    case OpType::kReducescatter: reducescatter(response, *tensors[0]); break;
    case OpType::kBarrier: transport_.barrier(); break;
    case OpType::kJoin: tensors[0]->state->last_joined_rank = response.last_joined; break;
  }
}

void OpExecutor::run_on_device(const Response& response, std::vector<TensorEntry*>& tensors) {
  // One GPU per process (as in Horovod): the engine and its communicator belong to the device
  // of the first CUDA tensor (-1 for a rank that has joined and has none: the engine picks).
  int device = device_;
  for (TensorEntry* t : tensors) {
    if (t) {
      device = t->input.device.index;
      break;
    }
  }
  if (!device_engine_) {
    device_engine_ = make_device_engine_(
        device, [this](const Response& r, std::vector<TensorEntry*>& host_tensors) { run_on_host(r, host_tensors); });
    device_ = device_engine_->device();
  }
  if (device >= 0 && device != device_) {
    throw Error("dtrain: " + std::string(to_string(response.type)) + " '" + response.names[0] +
                "' is on cuda:" + std::to_string(device) +
                " but this process's collectives run on cuda:" + std::to_string(device_) + " (one GPU per process)");
  }
  device_engine_->execute(response, tensors);
}

void OpExecutor::allreduce(const Response& response, std::vector<TensorEntry*>& tensors) {
  const DataType dtype = response.dtype;
  const std::size_t esize = element_size(dtype);
  const std::size_t total =
      static_cast<std::size_t>(std::accumulate(response.sizes.begin(), response.sizes.end(), std::int64_t{0}));
  if (tensors.size() == 1 || transport_.reduces_pieces_in_place()) {
    // Each tensor is reduced where it is, in its output (the transport copies straight from
    // and to it). A rank that has joined contributes zeros from a scratch buffer.
    std::vector<BufferPiece> pieces;
    std::size_t zeros_needed = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i]) zeros_needed += static_cast<std::size_t>(response.sizes[i]);
    }
    if (zeros_needed) {
      if (fusion_buffer_.size() < zeros_needed * esize) fusion_buffer_.resize(zeros_needed * esize);
      std::memset(fusion_buffer_.data(), 0, zeros_needed * esize);
    }
    std::size_t zeros_used = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const auto count = static_cast<std::size_t>(response.sizes[i]);
      if (tensors[i]) {
        TensorEntry& t = *tensors[i];
        if (t.input.data != t.output.data) std::memcpy(t.output.data, t.input.data, count * esize);
        pieces.push_back({t.output.data, count});
      } else {
        pieces.push_back({fusion_buffer_.data() + zeros_used * esize, count});
        zeros_used += count;
      }
      scale_elements(dtype, pieces.back().data, count, response.prescale);
    }
    activity_begin(response, "COMMUNICATE");
    transport_.allreduce_pieces(pieces, dtype, response.reduce_op,
                                result_scale(dtype, response.reduce_op, transport_.size(), response.postscale));
    activity_end(response);
    for (const auto& piece : pieces) {
      finish_integer_average(dtype, response.reduce_op, piece.data, piece.count, transport_.size());
    }
    return;
  }

  // The transport wants one contiguous buffer: pack the fused tensors into the fusion buffer.
  if (fusion_buffer_.size() < total * esize) fusion_buffer_.resize(total * esize);
  void* buffer = fusion_buffer_.data();
  activity_begin(response, "MEMCPY_IN_FUSION_BUFFER");
  std::size_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::size_t bytes = static_cast<std::size_t>(response.sizes[i]) * esize;
    if (tensors[i]) {
      std::memcpy(fusion_buffer_.data() + offset, tensors[i]->input.data, bytes);
    } else {
      std::memset(fusion_buffer_.data() + offset, 0, bytes);
    }
    offset += bytes;
  }
  activity_end(response);
  scale_elements(dtype, buffer, total, response.prescale);
  activity_begin(response, "COMMUNICATE");
  transport_.allreduce(buffer, total, dtype, response.reduce_op);
  activity_end(response);
  finish_reduction(dtype, response.reduce_op, buffer, total, transport_.size(), response.postscale);
  activity_begin(response, "MEMCPY_OUT_FUSION_BUFFER");
  offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::size_t bytes = static_cast<std::size_t>(response.sizes[i]) * esize;
    if (tensors[i]) std::memcpy(tensors[i]->output.data, fusion_buffer_.data() + offset, bytes);
    offset += bytes;
  }
  activity_end(response);
}

// The same arithmetic, in the same order, as the single-tensor path above over a transport
// that reduces in rank order (the TCP mesh, reduce_in_order both): so a ridden allreduce has
// the bits it would have had over the mesh.
void OpExecutor::reduce_ridden(const Response& response, TensorEntry& entry,
                               const std::vector<std::span<const char>>& by_rank) {
  const DataType dtype = response.dtype;
  const auto count = static_cast<std::size_t>(response.sizes.at(0));
  const std::size_t bytes = count * element_size(dtype);
  for (const auto& data : by_rank) {
    if (data.size() != bytes) {
      throw Error("dtrain: allreduce '" + response.names[0] + "' came with " + std::to_string(data.size()) +
                  " bytes from a rank where " + std::to_string(bytes) + " were planned (ranks out of sync)");
    }
  }
  // The riders lie at any offset in the summary: copied into aligned slots for the arithmetic.
  const std::size_t slot = (bytes + 15) / 16 * 16;
  if (fusion_buffer_.size() < slot * by_rank.size()) fusion_buffer_.resize(slot * by_rank.size());
  ridden_contributions_.resize(by_rank.size());
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    ridden_contributions_[r] = fusion_buffer_.data() + r * slot;
    std::memcpy(fusion_buffer_.data() + r * slot, by_rank[r].data(), bytes);
  }
  void* out = entry.output.data;
  reduce_in_order(dtype, response.reduce_op, out, ridden_contributions_, count);
  finish_reduction(dtype, response.reduce_op, out, count, static_cast<int>(by_rank.size()), response.postscale);
}

void OpExecutor::allgather(const Response& response, TensorEntry& entry) {
  const AllgatherLayout layout = allgather_layout(response, entry.input);
  void* out = allocate_output(entry, layout.output_shape);
  entry.state->received_splits = response.sizes;
  activity_begin(response, "COMMUNICATE");
  transport_.allgatherv(entry.input.data, out, layout.bytes);
  activity_end(response);
}

void OpExecutor::broadcast(const Response& response, TensorEntry& entry) {
  activity_begin(response, "COMMUNICATE");
  transport_.broadcast(entry.output.data, entry.output.num_bytes(), response.root);
  activity_end(response);
}

void OpExecutor::alltoall(const Response& response, TensorEntry& entry) {
  const AlltoallLayout layout = alltoall_layout(response, entry.input, transport_.rank(), transport_.size());
  void* out = allocate_output(entry, layout.output_shape);
  entry.state->received_splits = layout.received_rows;
  activity_begin(response, "COMMUNICATE");
  transport_.alltoallv(entry.input.data, layout.send_bytes, out, layout.receive_bytes);
  activity_end(response);
}

void OpExecutor::reducescatter(const Response& response, TensorEntry& entry) {
  const int world = transport_.size();
  const int me = transport_.rank();
  const DataType dtype = response.dtype;
  const ReducescatterLayout layout = reducescatter_layout(entry.input, me, world);
  const std::size_t total_bytes = entry.input.num_bytes();
  if (fusion_buffer_.size() < total_bytes) fusion_buffer_.resize(total_bytes);
  std::memcpy(fusion_buffer_.data(), entry.input.data, total_bytes);
  scale_elements(dtype, fusion_buffer_.data(), total_bytes / element_size(dtype), response.prescale);
  activity_begin(response, "COMMUNICATE");
  transport_.reducescatter(fusion_buffer_.data(), layout.counts, dtype, response.reduce_op);
  activity_end(response);
  std::byte* mine = fusion_buffer_.data() + layout.offsets[me] * element_size(dtype);
  finish_reduction(dtype, response.reduce_op, mine, layout.counts[me], world, response.postscale);
  void* out = allocate_output(entry, layout.output_shape);
  if (layout.counts[me]) std::memcpy(out, mine, layout.counts[me] * element_size(dtype));
}

}  // namespace dtrain::runtime
