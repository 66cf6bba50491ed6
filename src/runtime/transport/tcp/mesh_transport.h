// A Transport that sends what latency bounds over dtrain's own TCP mesh (tcp_mesh.h) and what
// bandwidth bounds over a bulk transport (Gloo: its ring pipelines large buffers).
//
// On the mesh each collective is one step in which every rank sends its part straight to the
// ranks that need it: a small allreduce is one exchange of everyone's whole buffer, reduced
// by every rank in rank order (so all hold the same bits), instead of a ring's 2(n-1)
// steps. That costs a rank n-1 copies of the buffer on the wire, so the mesh takes a data
// collective in one step only up to `small_bytes` of it. Beyond that an allreduce of two ranks
// runs as a ring on the mesh (in 1 MiB chunks, reduced while in cache: 1.4-1.5x Gloo's ring
// at 16-64 MiB between two hosts), and everything else goes to the bulk transport (Gloo's ring
// kept the lead with three ranks). Which path a call takes depends only on sizes every rank
// knows alike, so all ranks take the same one. The negotiation's messages, the reduction of
// its shortcut's summaries, barriers and alltoall always go over the mesh.
#pragma once

#include <memory>

#include "runtime/transport/tcp/tcp_mesh.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class MeshTransport final : public Transport {
 public:
  static constexpr std::size_t kSummaryBytes = 4096;

  static constexpr std::size_t kRiderBytes = 64 << 10;

  MeshTransport(std::unique_ptr<TcpMesh> mesh, std::unique_ptr<Transport> bulk, std::size_t small_bytes,
                std::size_t rider_bytes = kRiderBytes);

  int rank() const override { return mesh_->rank(); }
  int size() const override { return mesh_->size(); }
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message) override;
  std::vector<char> broadcast_from_coordinator(const std::vector<char>& message) override;
  std::size_t summary_capacity() const override { return kSummaryBytes; }
  // The mesh takes a message of any length; the budget bounds what riders cost the last step
  // of the recursive doubling, where every rank's arrive.
  std::size_t summary_rider_bytes() const override { return rider_bytes_; }
  // Recursive doubling (recursive_doubling.h): about log2(n) steps of one message each.
  std::vector<char> reduce_summaries(const std::vector<char>& message, SummaryCombine combine) override;
  void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                 const std::vector<std::size_t>& receive_bytes) override;
  void reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype, ReduceOp op) override;
  void barrier() override;

 private:
  // Whether a collective that puts `bytes` on the wire from one rank goes over the mesh.
  bool small(std::size_t bytes) const { return bytes <= small_bytes_; }
  // Whether a data collective's message of `bytes` (a size its sender and receiver both know)
  // travels as the mesh's bulk (TcpMesh::Send::bulk). alltoall's never do: there each side
  // knows only its own sizes, and a mismatch must stay an error naming the sender.
  static bool is_bulk(std::size_t bytes) { return bytes >= kBulkMessageBytes; }
  static constexpr std::size_t kBulkMessageBytes = 64 << 10;
  // A step is built from these, then run: this rank's `bytes` at `data` to every peer, and
  // every peer's message into received_[peer] (exactly `bytes`, or any length).
  void send_to_every_peer(const void* data, std::size_t bytes, bool bulk);
  void receive_from_every_peer(std::size_t bytes);
  void receive_from_every_peer_any_length();
  void run_step();
  // An allreduce of any size as a ring over the mesh (two ranks beyond the small size).
  void ring_allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op);
  static constexpr std::size_t kRingChunkBytes = 1 << 20;  // 256 KiB measured the same, 4 MiB slower
  // The reduction of every rank's `count` elements, in rank order, into accumulator_: this
  // rank's at `own`, each peer's in received_.
  void reduce_in_rank_order(const void* own, std::size_t count, DataType dtype, ReduceOp op);

  std::unique_ptr<TcpMesh> mesh_;
  std::unique_ptr<Transport> bulk_;
  std::size_t small_bytes_;
  std::size_t rider_bytes_;
  // Kept between calls so a small collective allocates nothing.
  std::vector<TcpMesh::Send> sends_;
  std::vector<TcpMesh::Receive> receives_;
  std::vector<std::vector<char>> received_;  // by peer
  std::vector<const void*> contributions_;   // by rank, for reduce_in_rank_order
  std::vector<char> accumulator_;
};

}  // namespace dtrain::runtime
