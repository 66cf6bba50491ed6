#include "runtime/transport/tcp/mesh_transport.h"

#include <algorithm>
#include <cstring>

#include "runtime/reduction.h"
#include "runtime/transport/recursive_doubling.h"

namespace dtrain::runtime {

MeshTransport::MeshTransport(std::unique_ptr<TcpMesh> mesh, std::unique_ptr<Transport> bulk, std::size_t small_bytes,
                             std::size_t rider_bytes)
    : mesh_(std::move(mesh)),
      bulk_(std::move(bulk)),
      small_bytes_(small_bytes),
      rider_bytes_(rider_bytes),
      received_(mesh_->size()) {}

void MeshTransport::send_to_every_peer(const void* data, std::size_t bytes, bool bulk) {
  for (int peer = 0; peer < size(); ++peer) {
    if (peer != rank()) sends_.push_back({peer, data, bytes, bulk});
  }
}

void MeshTransport::receive_from_every_peer(std::size_t bytes) {
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank()) continue;
    received_[peer].resize(bytes);
    receives_.push_back({.peer = peer, .data = received_[peer].data(), .bytes = bytes, .bulk = is_bulk(bytes)});
  }
}

void MeshTransport::receive_from_every_peer_any_length() {
  for (int peer = 0; peer < size(); ++peer) {
    if (peer != rank()) receives_.push_back({.peer = peer, .resizable = &received_[peer]});
  }
}

void MeshTransport::run_step() {
  try {
    mesh_->step(sends_, receives_);
  } catch (...) {
    sends_.clear();
    receives_.clear();
    throw;
  }
  sends_.clear();
  receives_.clear();
}

void MeshTransport::reduce_in_rank_order(const void* own, std::size_t count, DataType dtype, ReduceOp op) {
  contributions_.resize(size());
  for (int r = 0; r < size(); ++r) contributions_[r] = r == rank() ? own : received_[r].data();
  accumulator_.resize(count * element_size(dtype));
  reduce_in_order(dtype, op, accumulator_.data(), contributions_, count);
}

std::vector<std::vector<char>> MeshTransport::gather_to_coordinator(const std::vector<char>& message) {
  if (rank() != 0) {
    sends_.push_back({0, message.data(), message.size()});
    run_step();
    return {};
  }
  receive_from_every_peer_any_length();
  run_step();
  std::vector<std::vector<char>> all(size());
  all[0] = message;
  for (int peer = 1; peer < size(); ++peer) all[peer].swap(received_[peer]);
  return all;
}

std::vector<char> MeshTransport::broadcast_from_coordinator(const std::vector<char>& message) {
  if (rank() == 0) {
    send_to_every_peer(message.data(), message.size(), false);
    run_step();
    return message;
  }
  receives_.push_back({.peer = 0, .resizable = &received_[0]});
  run_step();
  return received_[0];
}

std::vector<char> MeshTransport::reduce_summaries(const std::vector<char>& message, SummaryCombine combine) {
  const DoublingSchedule schedule = doubling_schedule(rank(), size());
  if (schedule.hands_to >= 0) {
    sends_.push_back({schedule.hands_to, message.data(), message.size()});
    run_step();
    receives_.push_back({.peer = schedule.hands_to, .resizable = &received_[schedule.hands_to]});
    run_step();
    return received_[schedule.hands_to];
  }
  std::vector<char> partial = message;
  if (schedule.handed_from >= 0) {
    receives_.push_back({.peer = schedule.handed_from, .resizable = &received_[schedule.handed_from]});
    run_step();
    combine(partial, received_[schedule.handed_from]);
  }
  for (const int partner : schedule.partners) {
    sends_.push_back({partner, partial.data(), partial.size()});
    receives_.push_back({.peer = partner, .resizable = &received_[partner]});
    run_step();
    combine(partial, received_[partner]);
  }
  if (schedule.handed_from >= 0) {
    sends_.push_back({schedule.handed_from, partial.data(), partial.size()});
    run_step();
  }
  return partial;
}

void MeshTransport::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  const std::size_t bytes = count * element_size(dtype);
  if (count == 0) return;
  if (!small(bytes * (size() - 1))) {
    if (size() == 2) return ring_allreduce(data, count, dtype, op);
    return bulk_->allreduce(data, count, dtype, op);
  }
  send_to_every_peer(data, bytes, is_bulk(bytes));
  receive_from_every_peer(bytes);
  run_step();
  reduce_in_rank_order(data, count, dtype, op);
  std::memcpy(data, accumulator_.data(), bytes);
}

void MeshTransport::allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) {
  std::size_t total = 0;
  for (std::size_t b : bytes_per_rank) total += b;
  if (total == 0) return;
  if (!small(total)) return bulk_->allgatherv(input, output, bytes_per_rank);
  auto* out = static_cast<char*>(output);
  std::size_t offset = 0;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) {
      send_to_every_peer(input, bytes_per_rank[r], is_bulk(bytes_per_rank[r]));
      if (bytes_per_rank[r] && out + offset != input) std::memmove(out + offset, input, bytes_per_rank[r]);
    } else {
      receives_.push_back(
          {.peer = r, .data = out + offset, .bytes = bytes_per_rank[r], .bulk = is_bulk(bytes_per_rank[r])});
    }
    offset += bytes_per_rank[r];
  }
  run_step();
}

void MeshTransport::broadcast(void* data, std::size_t bytes, int root) {
  if (bytes == 0) return;
  if (!small(bytes * (size() - 1))) return bulk_->broadcast(data, bytes, root);
  if (rank() == root) {
    send_to_every_peer(data, bytes, is_bulk(bytes));
  } else {
    receives_.push_back({.peer = root, .data = data, .bytes = bytes, .bulk = is_bulk(bytes)});
  }
  run_step();
}

// Ring: the buffer in slices of n chunks; in each slice a reduce-scatter (n-1 steps, each
// passing one chunk's partial sum to the right and adding the left's into its own) leaves
// each rank one chunk fully reduced, and an allgather (n-1 steps) passes those around.
void MeshTransport::ring_allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  const int n = size(), me = rank();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const std::size_t esize = element_size(dtype);
  const std::size_t chunk_elements = std::max<std::size_t>(1, kRingChunkBytes / esize);
  auto* bytes = static_cast<char*>(data);
  accumulator_.resize(chunk_elements * esize);
  for (std::size_t slice = 0; slice < count; slice += chunk_elements * n) {
    const std::size_t slice_count = std::min(count - slice, chunk_elements * n);
    // Chunk c of this slice: elements [begin(c), begin(c + 1)).
    auto begin = [&](int c) { return slice + slice_count * c / n; };
    auto chunk = [&](int c) { return std::pair{bytes + begin(c) * esize, (begin(c + 1) - begin(c)) * esize}; };
    for (int s = 0; s < n - 1; ++s) {
      const auto [send, send_bytes] = chunk(((me - s) % n + n) % n);
      const auto [into, into_bytes] = chunk(((me - s - 1) % n + n) % n);
      sends_.push_back({right, send, send_bytes, true});
      receives_.push_back({.peer = left, .data = accumulator_.data(), .bytes = into_bytes, .bulk = true});
      run_step();
      reduce_elements(dtype, op, into, into, accumulator_.data(), into_bytes / esize);
    }
    for (int s = 0; s < n - 1; ++s) {
      const auto [send, send_bytes] = chunk(((me + 1 - s) % n + n) % n);
      const auto [into, into_bytes] = chunk(((me - s) % n + n) % n);
      sends_.push_back({right, send, send_bytes, true});
      receives_.push_back({.peer = left, .data = into, .bytes = into_bytes, .bulk = true});
      run_step();
    }
  }
}

// Always one step: every pair exchanges its parts directly, which is what a bulk alltoall
// does too, and each rank knows only its own sizes, so no size test could agree across ranks.
void MeshTransport::alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                              const std::vector<std::size_t>& receive_bytes) {
  const auto* in = static_cast<const char*>(input);
  auto* out = static_cast<char*>(output);
  std::size_t send_offset = 0, receive_offset = 0;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank()) {
      if (send_bytes[peer] != receive_bytes[peer]) {
        throw Error("dtrain: alltoall on rank " + std::to_string(peer) + " sends itself " +
                    std::to_string(send_bytes[peer]) + " bytes but expects " + std::to_string(receive_bytes[peer]));
      }
      if (send_bytes[peer]) std::memcpy(out + receive_offset, in + send_offset, send_bytes[peer]);
    } else {
      sends_.push_back({peer, in + send_offset, send_bytes[peer]});
      receives_.push_back({peer, out + receive_offset, receive_bytes[peer]});
    }
    send_offset += send_bytes[peer];
    receive_offset += receive_bytes[peer];
  }
  run_step();
}

void MeshTransport::reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype,
                                  ReduceOp op) {
  if (size() == 1) return;
  const std::size_t esize = element_size(dtype);
  std::size_t total = 0, mine = 0;
  for (int r = 0; r < size(); ++r) {
    if (r < rank()) mine += counts_per_rank[r] * esize;
    total += counts_per_rank[r] * esize;
  }
  if (total == 0) return;
  if (!small(total)) return bulk_->reducescatter(data, counts_per_rank, dtype, op);
  auto* bytes = static_cast<char*>(data);
  std::size_t offset = 0;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer != rank()) {
      const std::size_t part = counts_per_rank[peer] * esize;
      sends_.push_back({peer, bytes + offset, part, is_bulk(part)});
    }
    offset += counts_per_rank[peer] * esize;
  }
  const std::size_t count = counts_per_rank[rank()];
  receive_from_every_peer(count * esize);
  run_step();
  if (count == 0) return;
  reduce_in_rank_order(bytes + mine, count, dtype, op);
  std::memcpy(bytes + mine, accumulator_.data(), count * esize);
}

// Dissemination: in round k every rank signals the rank 2^k above it and waits for the one
// 2^k below, so after ceil(log2 n) rounds each has heard, through others, from every rank.
void MeshTransport::barrier() {
  for (int distance = 1; distance < size(); distance *= 2) {
    sends_.push_back({(rank() + distance) % size(), nullptr, 0});
    receives_.push_back({(rank() - distance + size()) % size(), nullptr, 0});
    run_step();
  }
}

}  // namespace dtrain::runtime
