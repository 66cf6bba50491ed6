#include "runtime/transport/gloo/gloo_transport.h"

#include <cstring>

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include "runtime/reduction.h"
#include "runtime/transport/gloo/http_store.h"
#include "runtime/transport/tcp/bind_address.h"

namespace dtrain::runtime {
namespace {

// Gloo matches point-to-point messages by (peer, slot). Its algorithms build slots from a
// one-byte prefix and a 32-bit tag; these prefixes are ones Gloo's algorithms do not use.
constexpr std::uint64_t kControlLengthSlot = std::uint64_t{0xf0} << 56;
constexpr std::uint64_t kControlDataSlot = (std::uint64_t{0xf0} << 56) | 1;
constexpr std::uint64_t kReduceScatterSlotPrefix = std::uint64_t{0xf1} << 56;

// Gloo wants a non-null pointer even for empty buffers.
char empty_buffer_byte;
void* non_null(void* p) { return p ? p : &empty_buffer_byte; }
void* non_null(const void* p) { return non_null(const_cast<void*>(p)); }

template <typename Fn>
void translate_gloo_errors(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const ::gloo::Exception& e) {
    throw WorkersLostError(std::string("dtrain: ") + what + " failed in Gloo (a peer may have exited): " + e.what());
  }
}

}  // namespace

std::unique_ptr<GlooTransport> GlooTransport::connect(const GlooConnectOptions& options) {
  const GroupRendezvous& group = options.group;
  HttpStore store(group.store_host, group.store_port, group.token, group.timeout);
  if (options.report_ready) store.report_ready(group.rank);
  gloo::rendezvous::PrefixStore prefixed(group.key_prefix, store);

  gloo::transport::tcp::attr attr;
  if (!options.iface.empty()) {
    attr.iface = options.iface;
  } else {
    // Gloo's own lookup crashes (rather than throws) on some names it cannot resolve, so it
    // only ever sees an address.
    attr.hostname = resolve_ipv4(options.hostname);
  }
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    throw Error("dtrain: cannot open a TCP device on " +
                (options.iface.empty() ? "address '" + options.hostname + "'" : "interface '" + options.iface + "'") +
                " (DTRAIN_IFACE / --network-interface): " + e.what());
  }
  auto context = std::make_shared<gloo::rendezvous::Context>(group.rank, group.size);
  context->setTimeout(group.timeout);
  try {
    context->connectFullMesh(prefixed, device);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("dtrain: connecting to the other ranks failed: ") + e.what());
  }
  return std::unique_ptr<GlooTransport>(new GlooTransport(std::move(context)));
}

GlooTransport::GlooTransport(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
GlooTransport::~GlooTransport() = default;

int GlooTransport::rank() const { return context_->rank; }
int GlooTransport::size() const { return context_->size; }

void GlooTransport::send_message(int peer, const std::vector<char>& message) {
  std::uint64_t length = message.size();
  auto length_buffer = context_->createUnboundBuffer(&length, sizeof(length));
  length_buffer->send(peer, kControlLengthSlot);
  std::unique_ptr<gloo::transport::UnboundBuffer> data_buffer;
  if (length) {
    data_buffer = context_->createUnboundBuffer(non_null(message.data()), length);
    data_buffer->send(peer, kControlDataSlot);
  }
  length_buffer->waitSend(context_->getTimeout());
  if (data_buffer) data_buffer->waitSend(context_->getTimeout());
}

std::vector<char> GlooTransport::receive_message(int peer) {
  std::uint64_t length = 0;
  auto length_buffer = context_->createUnboundBuffer(&length, sizeof(length));
  length_buffer->recv(peer, kControlLengthSlot);
  if (!length_buffer->waitRecv(context_->getTimeout())) {
    throw WorkersLostError("dtrain: no control message from rank " + std::to_string(peer) + " within " +
                           std::to_string(context_->getTimeout().count() / 1000) + " s (DTRAIN_TIMEOUT_S)");
  }
  std::vector<char> message(length);
  if (length) {
    auto data_buffer = context_->createUnboundBuffer(message.data(), length);
    data_buffer->recv(peer, kControlDataSlot);
    data_buffer->waitRecv(context_->getTimeout());
  }
  return message;
}

std::vector<std::vector<char>> GlooTransport::gather_to_coordinator(const std::vector<char>& message) {
  std::vector<std::vector<char>> all;
  translate_gloo_errors("negotiation", [&] {
    if (rank() != 0) {
      send_message(0, message);
      return;
    }
    all.resize(size());
    all[0] = message;
    for (int peer = 1; peer < size(); ++peer) all[peer] = receive_message(peer);
  });
  return all;
}

std::vector<char> GlooTransport::broadcast_from_coordinator(const std::vector<char>& message) {
  std::vector<char> result;
  translate_gloo_errors("negotiation", [&] {
    if (rank() == 0) {
      for (int peer = 1; peer < size(); ++peer) send_message(peer, message);
      result = message;
    } else {
      result = receive_message(0);
    }
  });
  return result;
}

void GlooTransport::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  if (count == 0) return;
  translate_gloo_errors("allreduce", [&] {
    gloo::AllreduceOptions opts(context_);
    // Gloo sizes segments by the element type; any type of the right width will do, since
    // the reduce function below interprets the bytes by dtype.
    switch (element_size(dtype)) {
      case 1: opts.setOutput(static_cast<std::uint8_t*>(data), count); break;
      case 2: opts.setOutput(static_cast<std::uint16_t*>(data), count); break;
      case 4: opts.setOutput(static_cast<std::uint32_t*>(data), count); break;
      default: opts.setOutput(static_cast<std::uint64_t*>(data), count); break;
    }
    opts.setReduceFunction([dtype, op](void* out, const void* a, const void* b, std::size_t n) {
      reduce_elements(dtype, op, out, a, b, n);
    });
    opts.setTag(next_tag());
    gloo::allreduce(opts);
  });
}

void GlooTransport::allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) {
  std::size_t total = 0;
  for (auto b : bytes_per_rank) total += b;
  if (total == 0) return;
  translate_gloo_errors("allgather", [&] {
    gloo::AllgathervOptions opts(context_);
    opts.setInput(static_cast<std::uint8_t*>(non_null(input)), bytes_per_rank[rank()]);
    opts.setOutput(static_cast<std::uint8_t*>(output), bytes_per_rank);
    opts.setTag(next_tag());
    gloo::allgatherv(opts);
  });
}

void GlooTransport::broadcast(void* data, std::size_t bytes, int root) {
  if (bytes == 0) return;
  translate_gloo_errors("broadcast", [&] {
    gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<std::uint8_t*>(data), bytes);
    opts.setRoot(root);
    opts.setTag(next_tag());
    gloo::broadcast(opts);
  });
}

void GlooTransport::alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                              const std::vector<std::size_t>& receive_bytes) {
  translate_gloo_errors("alltoall", [&] {
    gloo::AlltoallvOptions opts(context_);
    opts.setInput(static_cast<std::uint8_t*>(non_null(input)),
                  std::vector<std::int64_t>(send_bytes.begin(), send_bytes.end()));
    opts.setOutput(static_cast<std::uint8_t*>(non_null(output)),
                   std::vector<std::int64_t>(receive_bytes.begin(), receive_bytes.end()));
    opts.setTag(next_tag());
    gloo::alltoallv(opts);
  });
}

void GlooTransport::reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype,
                                  ReduceOp op) {
  const int n = size();
  if (n == 1) return;
  const std::size_t esize = element_size(dtype);
  std::vector<std::size_t> offsets(n + 1, 0);
  std::size_t largest = 0;
  for (int r = 0; r < n; ++r) {
    offsets[r + 1] = offsets[r] + counts_per_rank[r] * esize;
    largest = std::max(largest, counts_per_rank[r] * esize);
  }
  if (offsets[n] == 0) return;
  if (scratch_.size() < largest) scratch_.resize(largest);
  auto* bytes = static_cast<char*>(data);
  const int me = rank();
  const int right = (me + 1) % n;
  const int left = (me + n - 1) % n;
  const std::uint64_t slot_base = kReduceScatterSlotPrefix | (std::uint64_t{next_tag()} << 24);
  // Ring: at step s this rank passes its partial sum of segment (me - s - 1) to the right and
  // adds the left neighbour's partial sum of segment (me - s - 2) into its own; after n - 1
  // steps segment `me` holds every rank's contribution.
  translate_gloo_errors("reducescatter", [&] {
    for (int step = 0; step < n - 1; ++step) {
      const int send_segment = ((me - step - 1) % n + n) % n;
      const int recv_segment = ((me - step - 2) % n + n) % n;
      const std::size_t send_len = offsets[send_segment + 1] - offsets[send_segment];
      const std::size_t recv_len = offsets[recv_segment + 1] - offsets[recv_segment];
      const std::uint64_t slot = slot_base | static_cast<std::uint64_t>(step);
      std::unique_ptr<gloo::transport::UnboundBuffer> send_buffer, recv_buffer;
      if (recv_len) {
        recv_buffer = context_->createUnboundBuffer(scratch_.data(), recv_len);
        recv_buffer->recv(left, slot);
      }
      if (send_len) {
        send_buffer = context_->createUnboundBuffer(bytes + offsets[send_segment], send_len);
        send_buffer->send(right, slot);
      }
      if (recv_buffer) {
        recv_buffer->waitRecv(context_->getTimeout());
        void* target = bytes + offsets[recv_segment];
        reduce_elements(dtype, op, target, target, scratch_.data(), recv_len / esize);
      }
      if (send_buffer) send_buffer->waitSend(context_->getTimeout());
    }
  });
}

void GlooTransport::barrier() {
  translate_gloo_errors("barrier", [&] {
    gloo::BarrierOptions opts(context_);
    opts.setTag(next_tag());
    gloo::barrier(opts);
  });
}

}  // namespace dtrain::runtime
