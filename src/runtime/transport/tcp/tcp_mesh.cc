#include "runtime/transport/tcp/tcp_mesh.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

#include "dtrain/dtrain.h"
#include "runtime/logging.h"
#include "runtime/transport/gloo/http_store.h"

namespace dtrain::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How long a step polls its sockets before sleeping in poll(). A peer already on its way to
// the same step answers within a few µs (over loopback or a LAN); one still computing may take
// seconds, and a rank must not hold a core the computation needs. Measured (docs/performance.md,
// "Across hosts"): 20 µs serves 2 ranks as well as 50 or 200; with more ranks than cores
// longer polling starves the rank being waited for.
constexpr auto kPollBeforeSleep = std::chrono::microseconds(20);

// The first bytes on every connection: who connects, to which group. The fingerprint of the
// job token and key prefix tells a stray connection (another job, an old generation) apart.
struct Hello {
  std::uint64_t magic;
  std::uint64_t fingerprint;
  std::int32_t rank;
  std::int32_t size;
};
// "dtrain" and the protocol's version: ranks built with another framing refuse each other.
constexpr std::uint64_t kMagic = 0x64747261696e0001;
constexpr auto kHelloWithin = std::chrono::seconds(10);

// No negotiation message or small collective comes near this; a length beyond it is garbage.
constexpr std::uint64_t kLongestMessage = std::uint64_t{1} << 40;

// A message of any length is received into a buffer that grows with the bytes that arrive,
// from what it held for the last message or this size, doubling: the length is the peer's
// word, and a damaged one must not allocate what no bytes back. Negotiation messages fit the
// first piece.
constexpr std::size_t kFirstPiece = std::size_t{64} << 10;

std::uint64_t fingerprint(const std::string& token, const std::string& key_prefix) {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (const std::string* text : {&token, &key_prefix}) {
    for (unsigned char c : *text) hash = (hash ^ c) * 1099511628211ull;
    hash = (hash ^ 0xff) * 1099511628211ull;
  }
  return hash;
}

std::string errno_text() { return std::strerror(errno); }

// Room in `buffer` for more of a message of `length` bytes of which `received` have arrived.
std::size_t room_for_more(std::vector<char>& buffer, std::size_t received, std::uint64_t length) {
  if (buffer.size() == received) {
    buffer.resize(static_cast<std::size_t>(std::min<std::uint64_t>(length, std::max(2 * buffer.size(), kFirstPiece))));
  }
  return buffer.size() - received;
}

int milliseconds_until(Clock::time_point deadline) {
  // Rounded up: a wait of under a millisecond is a wait of one, not a poll that returns at once.
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

// Waits for `events` on `fd` until `deadline`; false on timeout.
bool wait_for(int fd, short events, Clock::time_point deadline) {
  while (true) {
    pollfd entry{fd, events, 0};
    const int ready = ::poll(&entry, 1, milliseconds_until(deadline));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR)
      throw Error("dtrain: poll() failed while connecting the TCP mesh: " + errno_text());
    if (Clock::now() >= deadline) return false;
  }
}

// Whole-buffer I/O on a nonblocking socket during setup; false on timeout or a closed socket.
bool write_all(int fd, const void* data, std::size_t bytes, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

sockaddr_in ipv4_endpoint(const std::string& address, int port) {
  sockaddr_in endpoint{};
  endpoint.sin_family = AF_INET;
  endpoint.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &endpoint.sin_addr) != 1) {
    throw Error("dtrain: '" + address + "' is not an IPv4 address");
  }
  return endpoint;
}

int new_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw Error("dtrain: cannot open a TCP socket: " + errno_text());
  return fd;
}

// A listening socket on `address`, any free port; returns the socket and its port.
std::pair<int, int> listen_on(const std::string& address, int backlog) {
  const int fd = new_socket();
  sockaddr_in endpoint = ipv4_endpoint(address, 0);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&endpoint), sizeof(endpoint)) != 0 || ::listen(fd, backlog) != 0) {
    const std::string why = errno_text();
    ::close(fd);
    throw Error("dtrain: cannot listen on " + address + " for the TCP mesh: " + why +
                " (set DTRAIN_IFACE / --network-interface to the network the ranks share)");
  }
  socklen_t length = sizeof(endpoint);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&endpoint), &length);
  return {fd, ntohs(endpoint.sin_port)};
}

// Starts connecting to `where` ("address:port"); the socket is nonblocking, so the connection
// completes later (finish_connecting).
int start_connecting(const std::string& where) {
  const auto colon = where.rfind(':');
  if (colon == std::string::npos) throw Error("dtrain: malformed TCP mesh address '" + where + "' in the store");
  int port = 0;
  const char* end = where.data() + where.size();
  if (std::from_chars(where.data() + colon + 1, end, port).ptr != end || port <= 0 || port > 65535) {
    throw Error("dtrain: malformed TCP mesh address '" + where + "' in the store");
  }
  sockaddr_in endpoint = ipv4_endpoint(where.substr(0, colon), port);
  const int fd = new_socket();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&endpoint), sizeof(endpoint)) != 0 && errno != EINPROGRESS) {
    const std::string why = errno_text();
    ::close(fd);
    throw Error("dtrain: cannot connect the TCP mesh to " + where + ": " + why);
  }
  return fd;
}

// Once `fd` (connecting to `whom` at `where`) is writable: whether the connection was made. The
// peer published that address after it began to listen, so a refusal means it has gone.
void finish_connecting(int fd, const std::string& whom, const std::string& where) {
  int error = 0;
  socklen_t length = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
  if (error) {
    throw WorkersLostError("dtrain: cannot connect the TCP mesh to " + whom + " at " + where + ": " +
                           std::strerror(error) + "; it may have exited");
  }
}

// A connection this rank accepted whose hello is still arriving.
struct Arriving {
  int fd;
  Clock::time_point given_up_at;  // a connection silent for long is not a rank
  Hello hello{};
  std::size_t received = 0;
};

// A connection waiting on `listener`, or none: none waiting (any more), or one that failed on
// its own (Linux reports a connection's network errors through accept; the next is fine).
// What leaves this process unable to accept any (out of descriptors or memory) is an error.
std::optional<int> accept_connection(int listener) {
  while (true) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) return fd;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    switch (errno) {
      case EMFILE:
      case ENFILE:
      case ENOBUFS:
      case ENOMEM:
      case EBADF:
      case EINVAL: throw Error("dtrain: cannot accept a TCP mesh connection: " + errno_text());
      default: continue;  // that connection's own failure (or EINTR): the next may be waiting
    }
  }
}

// Reads what has come of `connection`'s hello. The rank it introduces, once whole; -1 for a
// connection that is not from a rank of this group (it closed, broke, or said something
// else); nothing while more is due.
std::optional<int> read_hello(Arriving& connection, const Hello& mine) {
  const ssize_t n = ::recv(connection.fd, reinterpret_cast<char*>(&connection.hello) + connection.received,
                           sizeof(Hello) - connection.received, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
  if (n <= 0) return -1;
  connection.received += static_cast<std::size_t>(n);
  if (connection.received < sizeof(Hello)) return std::nullopt;
  const Hello& theirs = connection.hello;
  const bool from_a_rank = theirs.magic == kMagic && theirs.fingerprint == mine.fingerprint &&
                           theirs.size == mine.size && theirs.rank >= 0 && theirs.rank < mine.size &&
                           theirs.rank != mine.rank;
  return from_a_rank ? theirs.rank : -1;
}

// Forms a rank's half of the mesh: its connections to every peer, started at once, and the
// peers' connections to it, accepted as they come, all progressed by one poll loop. No rank
// waits for another to accept first, so the ranks need no order, nor a listen backlog that
// holds the whole group (the kernel caps it at net.core.somaxconn); and hellos are read as
// they arrive, since a rank blocked on one peer's hello would not write its own, and ranks
// waiting for each other's in a circle would each wait in vain.
class Formation {
 public:
  // `to_peer` and `from_peer` (by peer, -1 for this rank) receive the sockets as they are made.
  Formation(int listener, const Hello& mine, std::vector<std::string> where, std::string peer_noun,
            std::vector<int>& to_peer, std::vector<int>& from_peer)
      : listener_(listener),
        mine_(mine),
        where_(std::move(where)),
        peer_noun_(std::move(peer_noun)),
        to_peer_(to_peer),
        from_peer_(from_peer),
        introduced_(to_peer.size(), true) {
    for (std::size_t peer = 0; peer < to_peer_.size(); ++peer) {
      if (static_cast<int>(peer) == mine_.rank) continue;
      to_peer_[peer] = start_connecting(where_[peer]);
      introduced_[peer] = false;
    }
  }
  ~Formation() {
    for (const Arriving& connection : arriving_) {
      if (connection.fd >= 0) ::close(connection.fd);
    }
  }
  Formation(const Formation&) = delete;
  Formation& operator=(const Formation&) = delete;

  bool done() const { return unintroduced_ == 0 && unaccepted_ == 0; }

  // Waits for what can progress and progresses it; past `deadline`, a WorkersLostError naming
  // what is missing (`timeout` is what the error says was waited).
  void advance(Clock::time_point deadline, std::chrono::milliseconds timeout) {
    watch(deadline);
    const int ready = ::poll(waiting_.data(), waiting_.size(), milliseconds_until(wake_by_));
    if (ready < 0 && errno != EINTR)
      throw Error("dtrain: poll() failed while connecting the TCP mesh: " + errno_text());
    for (std::size_t i = 0; ready > 0 && i < waiting_.size(); ++i) {
      if (waiting_[i].revents == 0) continue;
      const int what = waiting_for_[i];
      if (what == kListener) {
        while (const auto fd = accept_connection(listener_)) arriving_.push_back({*fd, Clock::now() + kHelloWithin});
      } else if (what >= 0) {
        introduce_to(what, deadline);
      } else {
        hear_hello(static_cast<std::size_t>(kFirstArriving - what));
      }
    }
    const auto now = Clock::now();
    for (std::size_t i = 0; i < arriving_.size(); ++i) {
      if (arriving_[i].fd >= 0 && arriving_[i].given_up_at <= now) drop(i);
    }
    std::erase_if(arriving_, [](const Arriving& connection) { return connection.fd < 0; });
    if (!done() && now >= deadline) fail(timeout);
  }

 private:
  // waiting_for_ of the listener's entry; of arriving_[i]'s, kFirstArriving - i; of a
  // connection of this rank's, the peer's rank.
  static constexpr int kListener = -1;
  static constexpr int kFirstArriving = -2;

  // What to poll this time, and until when.
  void watch(Clock::time_point deadline) {
    waiting_.clear();
    waiting_for_.clear();
    wake_by_ = deadline;
    if (unaccepted_ > 0) {
      waiting_.push_back({listener_, POLLIN, 0});
      waiting_for_.push_back(kListener);
    }
    for (std::size_t peer = 0; peer < to_peer_.size(); ++peer) {
      if (introduced_[peer]) continue;
      waiting_.push_back({to_peer_[peer], POLLOUT, 0});
      waiting_for_.push_back(static_cast<int>(peer));
    }
    for (std::size_t i = 0; i < arriving_.size(); ++i) {
      waiting_.push_back({arriving_[i].fd, POLLIN, 0});
      waiting_for_.push_back(kFirstArriving - static_cast<int>(i));
      wake_by_ = std::min(wake_by_, arriving_[i].given_up_at);
    }
  }

  // This rank's connection to `peer` is writable: made (or failed), so the hello goes out.
  void introduce_to(int peer, Clock::time_point deadline) {
    const std::string whom = peer_noun_ + " " + std::to_string(peer);
    finish_connecting(to_peer_[peer], whom, where_[peer]);
    if (!write_all(to_peer_[peer], &mine_, sizeof(mine_), deadline)) {
      throw WorkersLostError("dtrain: " + whom + " closed the TCP mesh connection while it was made");
    }
    introduced_[peer] = true;
    --unintroduced_;
  }

  // More of arriving_[index]'s hello came: once whole, the connection is a peer's or dropped.
  void hear_hello(std::size_t index) {
    const auto rank = read_hello(arriving_[index], mine_);
    if (!rank) return;
    if (*rank < 0 || from_peer_[*rank] >= 0) return drop(index);
    from_peer_[*rank] = arriving_[index].fd;
    arriving_[index].fd = -1;
    --unaccepted_;
  }

  // Stray connections (another job's rank, a port scanner) are closed and forming goes on.
  void drop(std::size_t index) {
    log().warn("TCP mesh: ignored a connection that is not from a rank of this job and init()");
    ::close(arriving_[index].fd);
    arriving_[index].fd = -1;
  }

  [[noreturn]] void fail(std::chrono::milliseconds timeout) const {
    const std::string within = " within " + std::to_string(timeout.count() / 1000) + " s (DTRAIN_TIMEOUT_S)";
    if (unaccepted_ > 0) {
      throw WorkersLostError("dtrain: " + std::to_string(unaccepted_) + " other " + peer_noun_ +
                             "(s) did not connect the TCP mesh" + within);
    }
    const auto late = std::find(introduced_.begin(), introduced_.end(), false) - introduced_.begin();
    throw WorkersLostError("dtrain: could not connect the TCP mesh to " + peer_noun_ + " " + std::to_string(late) +
                           " at " + where_[late] + within + "; it may have exited");
  }

  int listener_;
  const Hello& mine_;
  std::vector<std::string> where_;  // by peer: where it listens
  std::string peer_noun_;
  std::vector<int>& to_peer_;
  std::vector<int>& from_peer_;
  std::vector<bool> introduced_;  // by peer: this rank's hello written on to_peer_
  int unintroduced_ = static_cast<int>(to_peer_.size()) - 1;
  int unaccepted_ = static_cast<int>(to_peer_.size()) - 1;
  std::vector<Arriving> arriving_;
  std::vector<pollfd> waiting_;
  std::vector<int> waiting_for_;  // by entry of waiting_ (kListener, kFirstArriving)
  Clock::time_point wake_by_;
};

}  // namespace

struct TcpMesh::Outgoing {
  int peer;
  int fd;
  std::uint64_t length;
  const char* data;
  std::size_t done;  // bytes sent, of the 8-byte length and the message

  bool finished() const { return done == sizeof(length) + length; }
};

struct TcpMesh::Incoming {
  TcpMesh::Receive* receive;
  int fd;
  std::uint64_t length;  // as the sender wrote it
  std::size_t done;      // bytes received, of the length and the message
  char* data;            // where the message goes, once its length is known

  bool finished() const { return done >= sizeof(length) && done == sizeof(length) + length; }
};

TcpMesh::TcpMesh(int rank, int size, std::string peer_noun, std::chrono::milliseconds timeout)
    : rank_(rank), to_peer_(size, -1), from_peer_(size, -1), peer_noun_(std::move(peer_noun)), timeout_(timeout) {}

std::unique_ptr<TcpMesh> TcpMesh::over(int rank, std::vector<int> sockets, std::string peer_noun,
                                       std::chrono::milliseconds timeout) {
  std::unique_ptr<TcpMesh> mesh(new TcpMesh(rank, static_cast<int>(sockets.size()), std::move(peer_noun), timeout));
  mesh->from_peer_ = sockets;
  mesh->to_peer_ = std::move(sockets);
  return mesh;
}

TcpMesh::~TcpMesh() {
  for (std::size_t peer = 0; peer < to_peer_.size(); ++peer) {
    if (to_peer_[peer] >= 0) ::close(to_peer_[peer]);
    if (from_peer_[peer] >= 0 && from_peer_[peer] != to_peer_[peer]) ::close(from_peer_[peer]);
  }
}

std::unique_ptr<TcpMesh> TcpMesh::connect(const TcpMeshOptions& options) {
  const GroupRendezvous& group = options.group;
  std::unique_ptr<TcpMesh> mesh(new TcpMesh(group.rank, group.size, options.peer_noun, group.timeout));
  if (group.size == 1) return mesh;
  const auto deadline = Clock::now() + group.timeout;
  const auto [listener, port] = listen_on(options.address, group.size);
  struct CloseListener {
    int fd;
    ~CloseListener() { ::close(fd); }
  } close_listener{listener};

  HttpStore store(group.store_host, group.store_port, group.token, group.timeout);
  const auto key = [&](int rank) { return group.key_prefix + "/mesh/" + std::to_string(rank); };
  const std::string here = options.address + ":" + std::to_string(port);
  store.set(key(group.rank), {here.begin(), here.end()});

  const Hello mine{kMagic, fingerprint(group.token, group.key_prefix), group.rank, group.size};
  std::vector<std::string> keys;  // every other rank's address, read in one request
  for (int peer = 0; peer < group.size; ++peer) {
    if (peer != group.rank) keys.push_back(key(peer));
  }
  const std::vector<std::string> addresses = store.get_all(keys);
  std::vector<std::string> where(group.size);  // by peer
  for (int peer = 0, index = 0; peer < group.size; ++peer) {
    if (peer != group.rank) where[peer] = addresses[static_cast<std::size_t>(index++)];
  }
  Formation formation(listener, mine, std::move(where), options.peer_noun, mesh->to_peer_, mesh->from_peer_);
  while (!formation.done()) formation.advance(deadline, group.timeout);
  for (const auto* sockets : {&mesh->to_peer_, &mesh->from_peer_}) {  // nonblocking since they were made
    for (int fd : *sockets) {
      const int on = 1;
      if (fd >= 0) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));  // a small message leaves at once
    }
  }
  return mesh;
}

int TcpMesh::socket_to(int peer, bool bulk) const { return bulk || rank_ < peer ? to_peer_[peer] : from_peer_[peer]; }

int TcpMesh::socket_from(int peer, bool bulk) const { return bulk || peer < rank_ ? from_peer_[peer] : to_peer_[peer]; }

void TcpMesh::step(std::span<const Send> sends, std::span<Receive> receives) {
  outgoing_.clear();
  incoming_.clear();
  for (const Send& send : sends) {
    outgoing_.push_back(
        {send.peer, socket_to(send.peer, send.bulk), send.bytes, static_cast<const char*>(send.data), 0});
  }
  for (Receive& receive : receives) {
    incoming_.push_back({&receive, socket_from(receive.peer, receive.bulk), 0, 0, static_cast<char*>(receive.data)});
  }
  const auto deadline = Clock::now() + timeout_;
  auto last_progress = Clock::now();
  std::size_t unfinished = outgoing_.size() + incoming_.size();
  while (unfinished > 0) {
    bool progressed = false;
    unfinished = 0;
    for (Outgoing& message : outgoing_) {
      if (message.finished()) continue;
      progressed |= advance(message);
      unfinished += !message.finished();
    }
    for (Incoming& message : incoming_) {
      if (message.finished()) continue;
      progressed |= advance(message);
      unfinished += !message.finished();
    }
    if (unfinished == 0) break;
    const auto now = Clock::now();
    if (progressed) {
      last_progress = now;
    } else if (now - last_progress > kPollBeforeSleep) {
      sleep_until_ready(deadline);
    }
  }
}

bool TcpMesh::advance(Outgoing& message) {
  iovec parts[2];
  int count = 0;
  if (message.done < sizeof(message.length)) {
    parts[count++] = {reinterpret_cast<char*>(&message.length) + message.done, sizeof(message.length) - message.done};
  }
  const std::size_t sent = message.done > sizeof(message.length) ? message.done - sizeof(message.length) : 0;
  if (message.length > sent) parts[count++] = {const_cast<char*>(message.data) + sent, message.length - sent};
  msghdr header{};
  header.msg_iov = parts;
  header.msg_iovlen = count;
  const ssize_t n = ::sendmsg(message.fd, &header, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return false;
    lost(message.peer, errno_text());
  }
  message.done += static_cast<std::size_t>(n);
  return n > 0;
}

bool TcpMesh::advance(Incoming& message) {
  Receive& receive = *message.receive;
  const int fd = message.fd;
  ssize_t n;
  if (message.done < sizeof(message.length)) {
    // With the length known in advance, the length and the message in one call; else the
    // length alone (reading further could take the start of the peer's next message).
    iovec parts[2] = {{reinterpret_cast<char*>(&message.length) + message.done, sizeof(message.length) - message.done},
                      {receive.data, receive.bytes}};
    msghdr header{};
    header.msg_iov = parts;
    header.msg_iovlen = receive.resizable || receive.bytes == 0 ? 1 : 2;
    n = ::recvmsg(fd, &header, MSG_DONTWAIT);
    if (n > 0 && message.done + static_cast<std::size_t>(n) >= sizeof(message.length)) {
      if (message.length > kLongestMessage) {
        throw Error("dtrain: " + peer_noun_ + " " + std::to_string(receive.peer) + " sent a message of " +
                    std::to_string(message.length) + " bytes: not a message of this protocol");
      }
      if (receive.resizable) {
        // A message no longer than the last one reuses its bytes without filling them again
        // (the negotiation's, every cycle).
        std::vector<char>& buffer = *receive.resizable;
        buffer.resize(
            static_cast<std::size_t>(std::min<std::uint64_t>(message.length, std::max(buffer.size(), kFirstPiece))));
      } else if (message.length != receive.bytes) {
        throw Error("dtrain: " + peer_noun_ + " " + std::to_string(receive.peer) + " sent " +
                    std::to_string(message.length) + " bytes where this " + peer_noun_ + " expected " +
                    std::to_string(receive.bytes) + ": the ranks' collective calls differ");
      }
    }
  } else {
    const std::size_t received = message.done - sizeof(message.length);
    std::size_t room = message.length - received;
    if (receive.resizable) {
      room = room_for_more(*receive.resizable, received, message.length);
      message.data = receive.resizable->data();
    }
    n = ::recv(fd, message.data + received, room, MSG_DONTWAIT);
  }
  if (n == 0) lost(receive.peer, "it closed the connection");
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return false;
    lost(receive.peer, errno_text());
  }
  message.done += static_cast<std::size_t>(n);
  return true;
}

// Sleeps until a socket this step waits on is ready. Readiness for a send is asked only of
// sends still under way, so a step with all sends done sleeps until a message arrives.
void TcpMesh::sleep_until_ready(Clock::time_point deadline) {
  std::vector<pollfd> waiting;
  for (const Outgoing& message : outgoing_) {
    if (!message.finished()) waiting.push_back({message.fd, POLLOUT, 0});
  }
  for (const Incoming& message : incoming_) {
    if (!message.finished()) {
      waiting.push_back({message.fd, POLLIN, 0});
    }
  }
  const int ready = ::poll(waiting.data(), waiting.size(), milliseconds_until(deadline));
  if (ready < 0 && errno != EINTR) throw Error("dtrain: poll() failed in the TCP mesh: " + errno_text());
  if (ready == 0 && Clock::now() >= deadline) {
    std::string silent, blocked;
    for (const Incoming& message : incoming_) {
      if (!message.finished()) silent += (silent.empty() ? "" : ", ") + std::to_string(message.receive->peer);
    }
    for (const Outgoing& message : outgoing_) {
      if (!message.finished()) blocked += (blocked.empty() ? "" : ", ") + std::to_string(message.peer);
    }
    const std::string what = silent.empty() ? "could not send to " + peer_noun_ + " " + blocked
                                            : "no message from " + peer_noun_ + " " + silent;
    throw WorkersLostError("dtrain: " + what + " within " + std::to_string(timeout_.count() / 1000) +
                           " s (DTRAIN_TIMEOUT_S)");
  }
}

void TcpMesh::lost(int peer, const std::string& why) const {
  throw WorkersLostError("dtrain: the TCP connection to " + peer_noun_ + " " + std::to_string(peer) + " broke (" + why +
                         "); it may have exited");
}

}  // namespace dtrain::runtime
