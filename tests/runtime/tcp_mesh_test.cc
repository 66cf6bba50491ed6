// dtrain's TCP mesh and the transport over it, with every rank a thread of this process and a
// rendezvous store served here: each collective's results on every rank, which path a size
// takes, and how a peer that sends the wrong thing, goes silent or goes away is reported.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <functional>
#include <iterator>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dtrain/dtrain.h"
#include "rendezvous/rendezvous_server.h"
#include "runtime/transport/tcp/mesh_transport.h"
#include "runtime/transport/tcp/tcp_mesh.h"

namespace dtrain::runtime {
namespace {

constexpr char kToken[] = "mesh-test-token";

// Stands in for Gloo: counts the calls that reach it and leaves the data alone.
class BulkCalls final : public Transport {
 public:
  explicit BulkCalls(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>&) override { return unexpected(); }
  std::vector<char> broadcast_from_coordinator(const std::vector<char>&) override {
    unexpected();
    return {};
  }
  void allreduce(void*, std::size_t, DataType, ReduceOp) override { ++calls; }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&) override { ++calls; }
  void broadcast(void*, std::size_t, int) override { ++calls; }
  void alltoallv(const void*, const std::vector<std::size_t>&, void*, const std::vector<std::size_t>&) override {
    unexpected();
  }
  void reducescatter(void*, const std::vector<std::size_t>&, DataType, ReduceOp) override { ++calls; }
  void barrier() override { unexpected(); }

  int calls = 0;

 private:
  std::vector<std::vector<char>> unexpected() {
    ADD_FAILURE() << "the negotiation, alltoall and barriers go over the mesh";
    return {};
  }
  int rank_, size_;
};

class MeshTest : public ::testing::Test {
 protected:
  void SetUp() override { port_ = server_.start("127.0.0.1"); }

  TcpMeshOptions options(int rank, int size, std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    TcpMeshOptions o;
    o.group.rank = rank;
    o.group.size = size;
    o.group.store_host = "127.0.0.1";
    o.group.store_port = port_;
    o.group.token = kToken;
    // One world per test and size (a test may form several, one after another).
    o.group.key_prefix = "test/" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "/" +
                         std::to_string(size);
    o.group.timeout = timeout;
    o.address = "127.0.0.1";
    return o;
  }

  // Runs `body(rank, transport)` on `size` threads, each a rank of one MeshTransport world;
  // the first exception of each rank, if any, by rank.
  std::vector<std::string> on_ranks(int size, std::size_t small_bytes,
                                    const std::function<void(int, MeshTransport&, BulkCalls&)>& body) {
    std::vector<std::string> errors(size);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank) {
      threads.emplace_back([&, rank] {
        try {
          auto bulk = std::make_unique<BulkCalls>(rank, size);
          BulkCalls& calls = *bulk;
          MeshTransport transport(TcpMesh::connect(options(rank, size)), std::move(bulk), small_bytes);
          body(rank, transport, calls);
        } catch (const std::exception& e) {
          errors[rank] = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    return errors;
  }

  // A connection to where rank 0 of a world of two listens, once it has published that: what
  // a process that is not a rank of the job (another job's, a port scanner) would open.
  int connect_a_stranger_to_rank0_of_two() {
    const std::string key = options(0, 2).group.key_prefix + "/mesh/0";
    std::optional<std::string> where;
    while (!(where = server_.value(key))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in endpoint{};
    endpoint.sin_family = AF_INET;
    endpoint.sin_port = htons(static_cast<std::uint16_t>(std::stoi(where->substr(where->rfind(':') + 1))));
    ::inet_pton(AF_INET, "127.0.0.1", &endpoint.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&endpoint), sizeof(endpoint)) == 0) return fd;
    ::close(fd);
    return -1;
  }

  rendezvous::RendezvousServer server_{kToken, 4};
  int port_ = 0;
};

void expect_no_errors(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

TEST_F(MeshTest, SmallAllreduceGivesEveryRankTheSameBitsTheRankOrderedSum) {
  constexpr int kRanks = 3;
  constexpr std::size_t kCount = 1000;
  // Values whose float sums depend on the order they are added in.
  auto values_of = [](int rank) {
    std::vector<float> v(kCount);
    for (std::size_t i = 0; i < kCount; ++i) v[i] = (rank == 1 ? 1e8f : 1.0f) * (1.0f + 0.37f * i) / (rank + 3);
    return v;
  };
  std::vector<float> expected(kCount);
  for (std::size_t i = 0; i < kCount; ++i) expected[i] = (values_of(0)[i] + values_of(1)[i]) + values_of(2)[i];
  std::vector<std::vector<float>> results(kRanks);
  expect_no_errors(on_ranks(kRanks, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls& bulk) {
    results[rank] = values_of(rank);
    mesh.allreduce(results[rank].data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(bulk.calls, 0);
  }));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(std::memcmp(results[r].data(), expected.data(), kCount * sizeof(float)), 0) << "rank " << r;
  }
}

TEST_F(MeshTest, LargeAllreduceOfTwoRanksRunsAsARingOnTheMeshWithTheSameBitsOnBoth) {
  constexpr std::size_t kCount = 700001;  // 2.8 MB: two slices of 1 MiB chunks, the last one short
  auto values_of = [](int rank) {
    std::vector<float> v(kCount);
    for (std::size_t i = 0; i < kCount; ++i) v[i] = (rank + 1) * 0.1f * static_cast<float>(i % 977) + rank;
    return v;
  };
  std::vector<std::vector<float>> results(2);
  expect_no_errors(on_ranks(2, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls& bulk) {
    results[rank] = values_of(rank);
    mesh.allreduce(results[rank].data(), kCount, DataType::kFloat32, ReduceOp::kSum);
    EXPECT_EQ(bulk.calls, 0);
  }));
  const auto a = values_of(0), b = values_of(1);
  for (std::size_t i = 0; i < kCount; ++i) {
    if (results[0][i] != a[i] + b[i]) {
      ADD_FAILURE() << "element " << i << ": " << results[0][i] << " != " << a[i] + b[i];
      break;
    }
  }
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), kCount * sizeof(float)), 0);
}

TEST_F(MeshTest, IntegerMaxAndProduct) {
  std::vector<std::vector<std::int64_t>> maxima(3), products(3);
  expect_no_errors(on_ranks(3, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls&) {
    maxima[rank] = {rank * 10, -rank, 7};
    products[rank] = {rank + 1, 2, -1};
    mesh.allreduce(maxima[rank].data(), 3, DataType::kInt64, ReduceOp::kMax);
    mesh.allreduce(products[rank].data(), 3, DataType::kInt64, ReduceOp::kProduct);
  }));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(maxima[r], (std::vector<std::int64_t>{20, 0, 7}));
    EXPECT_EQ(products[r], (std::vector<std::int64_t>{6, 8, -1}));
  }
}

TEST_F(MeshTest, DataCollectivesBeyondTheSmallSizeGoToTheBulkTransportOnEveryRank) {
  // With 3 ranks a rank sends its buffer to 2 peers: 2 x 256 bytes is beyond 300.
  std::vector<int> calls(3);
  expect_no_errors(on_ranks(3, 300, [&](int rank, MeshTransport& mesh, BulkCalls& bulk) {
    std::vector<float> data(64, 1.0f);
    mesh.allreduce(data.data(), 64, DataType::kFloat32, ReduceOp::kSum);
    mesh.broadcast(data.data(), 256, 0);
    std::vector<char> gathered(3 * 256);
    mesh.allgatherv(data.data(), gathered.data(), {256, 256, 256});
    std::vector<float> segments(90, 1.0f);
    mesh.reducescatter(segments.data(), {30, 30, 30}, DataType::kFloat32, ReduceOp::kSum);
    mesh.allreduce(data.data(), 32, DataType::kFloat32, ReduceOp::kSum);  // 2 x 128 bytes: the mesh
    EXPECT_EQ(data[0], 3.0f);
    calls[rank] = bulk.calls;
  }));
  EXPECT_EQ(calls, (std::vector<int>{4, 4, 4}));
}

// The union of two sorted sets of bytes: associative, commutative and exact, like the
// summaries' AND and OR, and it shows whose messages reached a result.
void sorted_union(std::vector<char>& into, const std::vector<char>& other) {
  std::vector<char> both;
  std::set_union(into.begin(), into.end(), other.begin(), other.end(), std::back_inserter(both));
  into = std::move(both);
}

// The shortcut's reduction by recursive doubling, for world sizes that are and are not powers
// of two: every rank's message reaches every rank's result.
TEST_F(MeshTest, ReducesSummariesOfEveryRankOnEveryRank) {
  for (const int ranks : {2, 3, 4, 6}) {
    expect_no_errors(on_ranks(ranks, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls&) {
      const std::vector<char> mine{static_cast<char>(rank)};
      std::vector<char> everyone(static_cast<std::size_t>(ranks));
      std::iota(everyone.begin(), everyone.end(), 0);
      EXPECT_EQ(mesh.reduce_summaries(mine, sorted_union), everyone) << "rank " << rank << " of " << ranks;
      EXPECT_EQ(mesh.reduce_summaries({}, sorted_union), std::vector<char>{});  // and again, empty
    }));
  }
}

TEST_F(MeshTest, GatherBroadcastAllgatherAlltoallReducescatterBarrier) {
  constexpr int kRanks = 4;
  expect_no_errors(on_ranks(kRanks, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls&) {
    // Negotiation: messages of every length, including none.
    const std::vector<char> report(static_cast<std::size_t>(rank * 3), static_cast<char>('a' + rank));
    const auto gathered = mesh.gather_to_coordinator(report);
    if (rank == 0) {
      ASSERT_EQ(gathered.size(), 4u);
      for (int r = 0; r < kRanks; ++r) EXPECT_EQ(gathered[r], std::vector<char>(r * 3, static_cast<char>('a' + r)));
    } else {
      EXPECT_TRUE(gathered.empty());
    }
    const std::vector<char> plan = rank == 0 ? std::vector<char>{'p', 'l', 'a', 'n'} : std::vector<char>{};
    EXPECT_EQ(mesh.broadcast_from_coordinator(plan), (std::vector<char>{'p', 'l', 'a', 'n'}));
    // The shortcut's reduction of the same messages of every length (rank 0's is empty).
    std::vector<char> every_report;
    for (int r = 1; r < kRanks; ++r) every_report.insert(every_report.end(), r * 3, static_cast<char>('a' + r));
    EXPECT_EQ(mesh.reduce_summaries(report, sorted_union), every_report);

    // Allgatherv with a rank that contributes nothing.
    const std::vector<std::size_t> lengths{2, 0, 3, 1};
    std::vector<char> mine(lengths[rank], static_cast<char>('0' + rank));
    std::vector<char> all(6);
    mesh.allgatherv(mine.data(), all.data(), lengths);
    EXPECT_EQ(std::string(all.begin(), all.end()), "002223");

    // Broadcast from a root other than 0.
    std::vector<std::int32_t> value{rank == 2 ? 42 : -1, rank == 2 ? 43 : -1};
    mesh.broadcast(value.data(), sizeof(std::int32_t) * 2, 2);
    EXPECT_EQ(value, (std::vector<std::int32_t>{42, 43}));

    // Alltoall: rank r sends r+1 bytes holding (10r + peer) to each peer.
    std::vector<std::size_t> send(kRanks, rank + 1), receive(kRanks);
    std::vector<char> out, in;
    for (int peer = 0; peer < kRanks; ++peer) {
      out.insert(out.end(), rank + 1, static_cast<char>(10 * rank + peer));
      receive[peer] = peer + 1;
    }
    in.resize(std::accumulate(receive.begin(), receive.end(), std::size_t{0}));
    mesh.alltoallv(out.data(), send, in.data(), receive);
    std::vector<char> want;
    for (int peer = 0; peer < kRanks; ++peer) want.insert(want.end(), peer + 1, static_cast<char>(10 * peer + rank));
    EXPECT_EQ(in, want);

    // Reduce-scatter of uneven segments: segment s gets every rank's (rank + s).
    const std::vector<std::size_t> counts{1, 2, 0, 3};
    std::vector<std::int32_t> segments;
    for (int s = 0; s < kRanks; ++s) segments.insert(segments.end(), counts[s], rank + s);
    mesh.reducescatter(segments.data(), counts, DataType::kInt32, ReduceOp::kSum);
    const std::size_t offset = std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
    for (std::size_t i = 0; i < counts[rank]; ++i) EXPECT_EQ(segments[offset + i], 6 + 4 * rank);

    for (int i = 0; i < 5; ++i) mesh.barrier();
  }));
}

// A pair's bulk messages travel on the sender's own connection, its small ones both ways on
// the lower rank's: with each direction switching between the two from step to step, every
// message still arrives whole and in its step.
TEST_F(MeshTest, BulkAndSmallMessagesArriveWholeInTheirStepsBetweenEveryPair) {
  constexpr int kRanks = 3, kSteps = 6;
  const auto is_bulk = [](int step, int sender) { return (step + sender) % 2 == 0; };
  const auto expected = [&](int step, int sender, int receiver) {
    std::vector<char> bytes(is_bulk(step, sender) ? 256 << 10 : 100);
    for (std::size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = static_cast<char>(sender * 31 + receiver * 7 + step * 13 + i);
    return bytes;
  };
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      try {
        auto mesh = TcpMesh::connect(options(rank, kRanks));
        for (int step = 0; step < kSteps; ++step) {
          std::vector<std::vector<char>> outgoing(kRanks), incoming(kRanks);
          std::vector<TcpMesh::Send> sends;
          std::vector<TcpMesh::Receive> receives;
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer == rank) continue;
            outgoing[peer] = expected(step, rank, peer);
            sends.push_back({peer, outgoing[peer].data(), outgoing[peer].size(), is_bulk(step, rank)});
            incoming[peer].resize(expected(step, peer, rank).size());
            receives.push_back({.peer = peer,
                                .data = incoming[peer].data(),
                                .bytes = incoming[peer].size(),
                                .bulk = is_bulk(step, peer)});
          }
          mesh->step(sends, receives);
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer != rank && incoming[peer] != expected(step, peer, rank)) {
              errors[rank] +=
                  "step " + std::to_string(step) + ": rank " + std::to_string(peer) + "'s message differs; ";
            }
          }
        }
      } catch (const std::exception& e) {
        errors[rank] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  expect_no_errors(errors);
}

TEST_F(MeshTest, AMessageOfTheWrongLengthIsAnErrorNamingItsSender) {
  const auto errors = on_ranks(2, 64 << 10, [&](int rank, MeshTransport& mesh, BulkCalls&) {
    std::vector<float> data(rank == 0 ? 8 : 9, 1.0f);  // the ranks' calls differ
    mesh.allreduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum);
  });
  EXPECT_NE(errors[0].find("rank 1 sent 36 bytes where this rank expected 32"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("rank 0 sent 32 bytes where this rank expected 36"), std::string::npos) << errors[1];
}

TEST_F(MeshTest, APeerThatGoesAwayIsNamed) {
  std::string error;
  std::thread leaver([&] {
    auto mesh = TcpMesh::connect(options(1, 2));  // connects, then closes its sockets
  });
  try {
    auto mesh = TcpMesh::connect(options(0, 2));
    std::vector<char> reply(4);
    TcpMesh::Receive receive{1, reply.data(), reply.size()};
    mesh->step({}, {&receive, 1});
  } catch (const WorkersLostError& e) {
    error = e.what();
  }
  leaver.join();
  EXPECT_NE(error.find("TCP connection to rank 1 broke"), std::string::npos) << error;
}

TEST_F(MeshTest, APeerThatStaysSilentIsNamedAfterTheTimeout) {
  std::string error;
  std::thread silent([&] {
    auto mesh = TcpMesh::connect(options(1, 2));
    std::this_thread::sleep_for(std::chrono::seconds(3));
  });
  try {
    auto mesh = TcpMesh::connect(options(0, 2, std::chrono::seconds(1)));
    TcpMesh::Receive receive{1, nullptr, 0};
    mesh->step({}, {&receive, 1});
  } catch (const WorkersLostError& e) {
    error = e.what();
  }
  silent.join();
  EXPECT_NE(error.find("no message from rank 1 within 1 s (DTRAIN_TIMEOUT_S)"), std::string::npos) << error;
}

TEST_F(MeshTest, AStrayConnectionIsIgnored) {
  // A connection that does not introduce itself as a rank of this job (another job's rank,
  // a port scanner) reaches rank 0 first; the mesh still forms with the real rank 1.
  std::thread rank0([&] {
    auto mesh = TcpMesh::connect(options(0, 2));
    std::int32_t value = 5;
    TcpMesh::Send send{1, &value, sizeof(value)};
    mesh->step({&send, 1}, {});
  });
  const int stray = connect_a_stranger_to_rank0_of_two();
  ASSERT_GE(stray, 0);
  const char garbage[24] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_EQ(::send(stray, garbage, sizeof(garbage), 0), static_cast<ssize_t>(sizeof(garbage)));

  auto mesh = TcpMesh::connect(options(1, 2));
  std::int32_t value = 0;
  TcpMesh::Receive receive{0, &value, sizeof(value)};
  mesh->step({}, {&receive, 1});
  EXPECT_EQ(value, 5);
  rank0.join();
  ::close(stray);
}

TEST_F(MeshTest, AStrayConnectionThatSaysNothingDoesNotHoldTheMeshUp) {
  // Connected to rank 0 before rank 1, it never writes a hello; rank 0 stops listening to it
  // only after 10 s, but forms the mesh with rank 1 meanwhile: within the group's timeout of
  // 5 s, or the mesh fails naming the rank that did not connect.
  std::string error;
  int received = 0;
  std::thread rank0([&] {
    try {
      auto mesh = TcpMesh::connect(options(0, 2, std::chrono::seconds(5)));
      TcpMesh::Receive receive{1, &received, sizeof(received)};
      mesh->step({}, {&receive, 1});
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  const int silent = connect_a_stranger_to_rank0_of_two();
  ASSERT_GE(silent, 0);

  auto mesh = TcpMesh::connect(options(1, 2, std::chrono::seconds(5)));
  const int value = 7;
  TcpMesh::Send send{0, &value, sizeof(value)};
  mesh->step({&send, 1}, {});
  rank0.join();
  ::close(silent);
  EXPECT_EQ(error, "");
  EXPECT_EQ(received, 7);
}

// A mesh of two whose peer is this test: rank 0's end of a socket pair is the mesh's, the
// other end is returned to write what a peer would.
std::pair<std::unique_ptr<TcpMesh>, int> mesh_with_a_hand_written_peer() {
  int ends[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends), 0);
  EXPECT_EQ(::fcntl(ends[0], F_SETFL, O_NONBLOCK), 0);
  return {TcpMesh::over(0, {-1, ends[0]}, "rank", std::chrono::seconds(60)), ends[1]};
}

// False once the mesh's end is gone (a failed test): no SIGPIPE, no write blocked for ever.
bool write_message(int fd, std::uint64_t length, const std::vector<char>& bytes) {
  if (::send(fd, &length, sizeof(length), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(length))) return false;
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

TEST(MeshFraming, AMessageOfAnyLengthArrivesWholeThroughAGrowingBuffer) {
  auto [mesh, peer] = mesh_with_a_hand_written_peer();
  std::vector<char> sent((std::size_t{1} << 20) + 3);
  for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 7);
  std::thread writer([&, peer = peer] {
    EXPECT_TRUE(write_message(peer, sent.size(), sent) && write_message(peer, 5, {'s', 'm', 'a', 'l', 'l'}));
  });
  std::vector<char> received;
  TcpMesh::Receive receive{.peer = 1, .resizable = &received};
  try {
    mesh->step({}, {&receive, 1});
    EXPECT_EQ(received, sent);
    mesh->step({}, {&receive, 1});
    EXPECT_EQ(std::string(received.begin(), received.end()), "small");
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
  }
  mesh.reset();  // closes the mesh's end, so a writer still under way stops
  writer.join();
  ::close(peer);
}

TEST(MeshFraming, ALengthTheBytesDoNotBackAllocatesOnlyWhatArrives) {
  // A damaged or hostile peer announces half a terabyte and sends ten bytes: the receive ends
  // naming the peer when the connection closes, having allocated for what arrived.
  auto [mesh, peer] = mesh_with_a_hand_written_peer();
  ASSERT_TRUE(write_message(peer, std::uint64_t{1} << 39, std::vector<char>(10, 'x')));
  ::close(peer);
  std::vector<char> received;
  TcpMesh::Receive receive{.peer = 1, .resizable = &received};
  try {
    mesh->step({}, {&receive, 1});
    ADD_FAILURE() << "a message cut short was taken";
  } catch (const WorkersLostError& e) {
    EXPECT_NE(std::string(e.what()).find("TCP connection to rank 1 broke"), std::string::npos) << e.what();
  }
  EXPECT_LE(received.capacity(), std::size_t{64} << 10);
}

}  // namespace
}  // namespace dtrain::runtime
