// The links between the master's and the workers' entry points on loopback: the hello and its
// answer carry the protocol version, and a host of another dtrain build is refused naming both.
#include "job/host_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <future>
#include <string>

#include "job/job_error.h"

namespace dtrain::job {
namespace {

// A free loopback port: bound, read back and released (the link binds it right after).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// Reads one line (without its '\n') from `fd`, or what came before the peer closed.
std::string read_line(int fd) {
  std::string line;
  char c;
  while (::recv(fd, &c, 1, 0) == 1 && c != '\n') line += c;
  return line;
}

// A peer that plays the other side of the hello as some other build would.
class RawPeer {
 public:
  ~RawPeer() {
    if (fd_ >= 0) ::close(fd_);
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }
  void connect_to(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  }
  void listen_on(int port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    const int on = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    ASSERT_EQ(::listen(listen_fd_, 4), 0);
  }
  void accept_one() { fd_ = ::accept(listen_fd_, nullptr, nullptr); }
  void send(const std::string& text) {
    ASSERT_EQ(::send(fd_, text.data(), text.size(), MSG_NOSIGNAL), ssize_t(text.size()));
  }
  std::string line() { return read_line(fd_); }

 private:
  int listen_fd_ = -1;
  int fd_ = -1;
};

TEST(HostLink, AMasterAndAWorkerOfThisBuildConnectAndTheWorkerHearsTheEnd) {
  const int port = free_port();
  WorkerLink worker;
  worker.listen("127.0.0.1", port);
  auto accepted = std::async(std::launch::async, [&] { return worker.accept_master(30); });
  MasterLinks master;
  master.connect_all({"127.0.0.1"}, "algo-1", port, 30);
  ASSERT_TRUE(accepted.get());
  EXPECT_EQ(worker.master(), "algo-1");
  auto ended = std::async(std::launch::async, [&] { return worker.wait_for_end(); });
  auto reported = std::async(std::launch::async, [&] { master.report_end({3, "a rank failed"}, 30); });
  const auto end = ended.get();
  worker.acknowledge_end();
  reported.get();
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->exit_code, 3);
  EXPECT_EQ(end->reason, "a rank failed");
}

TEST(HostLink, AWorkerRefusesAMasterOfAnotherVersionNamingBoth) {
  struct Master {
    std::string hello;
    int version;
  };
  const Master masters[] = {
      {"dtrain-job-master algo-1 " + std::to_string(kHostLinkVersion + 1) + "\n", kHostLinkVersion + 1},
      {"dtrain-job-master algo-1\n", 0}};  // a build before versions
  for (const auto& [hello, theirs] : masters) {
    const int port = free_port();
    WorkerLink worker;
    worker.listen("127.0.0.1", port);
    auto accepted = std::async(std::launch::async, [&] { return worker.accept_master(30); });
    RawPeer master;
    master.connect_to(port);
    master.send(hello);
    EXPECT_EQ(master.line(), "dtrain-job-worker " + std::to_string(kHostLinkVersion));
    try {
      accepted.get();
      FAIL() << "accepted " << hello;
    } catch (const JobError& e) {
      EXPECT_EQ(std::string(e.what()), "the master algo-1 speaks host-link protocol version " + std::to_string(theirs) +
                                           ", this host version " + std::to_string(kHostLinkVersion) +
                                           " (the hosts run different dtrain builds)");
    }
  }
}

TEST(HostLink, TheMasterRefusesAWorkerOfAnotherVersionNamingTheHostAndBoth) {
  const int port = free_port();
  RawPeer worker;
  worker.listen_on(port);
  auto answered = std::async(std::launch::async, [&] {
    worker.accept_one();
    const std::string hello = worker.line();
    worker.send("dtrain-job-worker " + std::to_string(kHostLinkVersion + 1) + "\n");
    return hello;
  });
  MasterLinks master;
  try {
    master.connect_all({"127.0.0.1"}, "algo-1", port, 30);
    FAIL() << "connected to a worker of another version";
  } catch (const JobError& e) {
    EXPECT_EQ(std::string(e.what()), "host 127.0.0.1 speaks host-link protocol version " +
                                         std::to_string(kHostLinkVersion + 1) + ", this host version " +
                                         std::to_string(kHostLinkVersion) + " (the hosts run different dtrain builds)");
  }
  EXPECT_EQ(answered.get(), "dtrain-job-master algo-1 " + std::to_string(kHostLinkVersion));
}

}  // namespace
}  // namespace dtrain::job
