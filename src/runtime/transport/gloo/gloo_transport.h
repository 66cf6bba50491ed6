// Collectives over TCP through Gloo, the engine PyTorch uses on CPU. Data operations use
// Gloo's algorithms (ring allreduce, allgatherv, broadcast, alltoallv, barrier) with
// dtrain's reduction functions, so every dtype and op works; reduce-scatter and the
// negotiation messages are point-to-point exchanges over Gloo's unbound buffers.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "runtime/transport/group_rendezvous.h"
#include "runtime/transport/transport.h"

namespace gloo {
class Context;
}

namespace dtrain::runtime {

struct GlooConnectOptions {
  GroupRendezvous group;
  std::string iface;         // network interface to bind, or empty
  std::string hostname;      // address to bind when no interface is given
  bool report_ready = true;  // false for sub-groups: the launcher tracks world ranks only
};

class GlooTransport final : public Transport {
 public:
  static std::unique_ptr<GlooTransport> connect(const GlooConnectOptions& options);
  ~GlooTransport() override;

  int rank() const override;
  int size() const override;
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message) override;
  std::vector<char> broadcast_from_coordinator(const std::vector<char>& message) override;
  void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                 const std::vector<std::size_t>& receive_bytes) override;
  void reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype, ReduceOp op) override;
  void barrier() override;

 private:
  explicit GlooTransport(std::shared_ptr<gloo::Context> context);
  void send_message(int peer, const std::vector<char>& message);
  std::vector<char> receive_message(int peer);
  std::uint32_t next_tag() { return tag_++; }

  std::shared_ptr<gloo::Context> context_;
  std::uint32_t tag_ = 0;
  std::vector<char> scratch_;  // reduce-scatter receive buffer
};

}  // namespace dtrain::runtime
