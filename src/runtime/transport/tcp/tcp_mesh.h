// dtrain's own full mesh of TCP connections among a group's ranks, for what latency bounds:
// the negotiation's messages, small collectives, barriers, and the two-rank ring's bulk. Gloo's
// pairs hand every arriving message from their event-loop thread to the thread that waits for
// it, which costs hundreds of µs per message on a busy host (docs/performance.md, "Across
// hosts"). Here the calling thread does the socket I/O itself: all sends and receives of one
// step progress together on nonblocking sockets, and while replies are due the thread polls
// them for a few tens of µs (a peer that is on its way answers within that) before it sleeps
// in poll().
//
// Each rank connects to every other, so a pair has two connections, one made by each. Bulk
// goes on the sender's own: one connection carrying bulk both ways at once cost the kernel 1.7x
// the CPU time of two carrying it one way each, and a pair's exchange in a ring goes both ways
// at once. Small messages go both ways on the lower rank's connection, where each reply carries
// the acknowledgement of what it answers (one way each, a 4 KiB allreduce took ~3 µs longer).
// Measured: docs/performance.md, "One connection per direction".
//
// On the wire a message is its length (8 bytes, in the host's byte order: a job's ranks share
// an architecture) and then its bytes. Every step is collective and a connection delivers in
// order, so messages carry no tags: on each connection and direction, the n-th message is the
// sender's part of the n-th step that puts a message there (sender and receiver agree on which
// messages are bulk, so they agree on the connection).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/transport/group_rendezvous.h"

namespace dtrain::runtime {

struct TcpMeshOptions {
  GroupRendezvous group;           // each rank publishes in the store where it listens
  std::string address;             // the IPv4 address this rank listens on, which the others connect to
  std::string peer_noun = "rank";  // how errors name a peer ("host" for a cross-host group)
};

class TcpMesh {
 public:
  // `bulk`: on the sender's own connection. Sender and receiver must agree on it (both derive
  // it from what both know, e.g. the size of a data collective); where they do not, the
  // receiver reads another message than the one meant, and the step fails with a length error
  // or, where nothing arrives on the connection it reads, at the timeout, naming the sender.
  struct Send {
    int peer;
    const void* data;
    std::size_t bytes;
    bool bulk = false;
  };
  // A message of exactly `bytes` into `data`, or, with `resizable`, of any length into it.
  struct Receive {
    int peer;
    void* data = nullptr;
    std::size_t bytes = 0;
    std::vector<char>* resizable = nullptr;
    bool bulk = false;
  };

  // Collective over the group: every rank listens, publishes its address in the store,
  // connects to every other rank and accepts a connection from each.
  static std::unique_ptr<TcpMesh> connect(const TcpMeshOptions& options);
  // A mesh over connections made elsewhere (nonblocking stream sockets by peer, -1 for this
  // rank, each carrying both directions), which it takes over: how tests and the fuzz target
  // feed it bytes of their own.
  static std::unique_ptr<TcpMesh> over(int rank, std::vector<int> sockets, std::string peer_noun,
                                       std::chrono::milliseconds timeout);
  ~TcpMesh();
  TcpMesh(const TcpMesh&) = delete;
  TcpMesh& operator=(const TcpMesh&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(to_peer_.size()); }

  // Makes every send and receive, all progressing together, and returns when all are done.
  // A peer that closes its connection is a WorkersLostError naming it, as is silence beyond
  // the timeout; a message of another length than expected is an Error naming its sender.
  void step(std::span<const Send> sends, std::span<Receive> receives);

 private:
  struct Outgoing;
  struct Incoming;
  TcpMesh(int rank, int size, std::string peer_noun, std::chrono::milliseconds timeout);
  int socket_to(int peer, bool bulk) const;
  int socket_from(int peer, bool bulk) const;
  bool advance(Outgoing& message);
  bool advance(Incoming& message);
  void sleep_until_ready(std::chrono::steady_clock::time_point deadline);
  [[noreturn]] void lost(int peer, const std::string& why) const;

  int rank_;
  // By peer, -1 for this rank: the connection this rank made to the peer, and the one the
  // peer made to it (the same socket in a mesh made by over()).
  std::vector<int> to_peer_;
  std::vector<int> from_peer_;
  std::string peer_noun_;
  std::chrono::milliseconds timeout_;
  // One step's progress, kept between steps so a step allocates nothing.
  std::vector<Outgoing> outgoing_;
  std::vector<Incoming> incoming_;
};

}  // namespace dtrain::runtime
