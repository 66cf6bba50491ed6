#include "job/host_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "job/job_error.h"
#include "settings/env_setting.h"

namespace dtrain::job {
namespace {

using Clock = std::chrono::steady_clock;

// The master's hello, "dtrain-job-master <master> <version>", and the worker's answer,
// "dtrain-job-worker <version>": each side refuses another version, naming both. A build
// before versions sent no version (read as 0) and gave no answer.
constexpr const char* kHello = "dtrain-job-master";
constexpr const char* kAnswer = "dtrain-job-worker";
constexpr double kAnswerWait_s = 5;

void close_quietly(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void enable_keepalive(int fd) {
  int on = 1, idle = 5, interval = 2, count = 3;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

bool send_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Reads one '\n'-terminated line; nullopt on EOF or error, with `error` set to the errno
// (0 for EOF) when given.
std::optional<std::string> read_line(int fd, std::string& buffer, int* error = nullptr) {
  while (true) {
    size_t nl = buffer.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return line;
    }
    char chunk[4096];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (error) *error = n < 0 ? errno : 0;
      return std::nullopt;
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

// The version that ends a hello or an answer (its last word), or 0 when the last word is not
// a number (a hello of a build before versions ends with the master's name).
int version_in(const std::string& line) {
  const size_t space = line.rfind(' ');
  if (space == std::string::npos) return 0;
  int version = 0;
  const char* last = line.data() + line.size();
  const auto [end, error] = std::from_chars(line.data() + space + 1, last, version);
  return error == std::errc() && end == last ? version : 0;
}

std::string other_version(const std::string& who, int theirs) {
  return fmt::format(
      "{} speaks host-link protocol version {}, this host version {} (the hosts run different dtrain "
      "builds)",
      who, theirs, kHostLinkVersion);
}

// The master's side of the hello on a fresh connection to `host`: false when it could not be
// sent (try again later); throws JobError when the worker answers with another version or not
// at all.
bool greet(int fd, const std::string& host, const std::string& master) {
  if (!send_all(fd, fmt::format("{} {} {}\n", kHello, master, kHostLinkVersion))) return false;
  std::string buffer;
  pollfd p{fd, POLLIN, 0};
  std::optional<std::string> answer;
  if (::poll(&p, 1, static_cast<int>(kAnswerWait_s * 1000)) > 0) answer = read_line(fd, buffer);
  if (!answer || !answer->starts_with(std::string(kAnswer) + " ")) {
    throw JobError::runtime(
        fmt::format("host {} did not answer the master's hello within {} s (an entry point of a "
                    "dtrain build before host-link protocol versions?)",
                    host, kAnswerWait_s));
  }
  if (const int theirs = version_in(*answer); theirs != kHostLinkVersion) {
    throw JobError::runtime(other_version("host " + host, theirs));
  }
  return true;
}

int try_connect(const std::string& address, int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  enable_keepalive(fd);
  return fd;
}

}  // namespace

std::optional<std::string> resolve_host(const std::string& name) {
  if (const char* file = std::getenv("DTRAIN_HOSTS_FILE"); file && *file) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
      std::istringstream words(line.substr(0, line.find('#')));
      std::string address;
      if (!(words >> address)) continue;
      for (std::string alias; words >> alias;) {
        if (alias == name) return address;
      }
    }
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0 || !found) return std::nullopt;
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> guard(found, &::freeaddrinfo);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof(text));
  return std::string(text);
}

std::string master_closed_link(const std::string& master) {
  return fmt::format("the master {} closed the link", master);
}

int host_link_port() { return settings::env_port("DTRAIN_HOST_PORT").value_or(29417); }

MasterLinks::~MasterLinks() {
  for (auto& l : links_) close_quietly(l.fd);
}

void MasterLinks::connect_all(const std::vector<std::string>& hosts, const std::string& master, int port,
                              double wait_s) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  std::vector<std::string> pending = hosts;
  while (true) {
    std::vector<std::string> still;
    for (const auto& host : pending) {
      std::optional<std::string> address = resolve_host(host);
      int fd = address ? try_connect(*address, port) : -1;
      bool greeted = false;
      try {
        greeted = fd >= 0 && greet(fd, host, master);
      } catch (const JobError&) {
        ::close(fd);
        throw;
      }
      if (greeted) {
        links_.push_back({host, fd});
      } else {
        if (fd >= 0) ::close(fd);
        still.push_back(host);
      }
    }
    pending = std::move(still);
    if (pending.empty()) return;
    if (Clock::now() >= deadline) {
      throw JobError::runtime(fmt::format("host{} {} not reachable within {} s (no entry point listening on port {})",
                                          pending.size() == 1 ? "" : "s", fmt::join(pending, ", "), wait_s, port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

void MasterLinks::report_end(const JobEnd& end, double ack_wait_s) {
  std::string reason = end.reason;
  for (char& c : reason) {
    if (c == '\n') c = ' ';
  }
  for (auto& l : links_) {
    send_all(l.fd, fmt::format("end {} {}\n", end.exit_code, reason));
    ::shutdown(l.fd, SHUT_WR);
  }
  // A worker acknowledges by closing its end: the link reads as ended (or failed) then.
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ack_wait_s));
  for (auto& l : links_) {
    char byte;
    while (Clock::now() < deadline) {
      pollfd p{l.fd, POLLIN, 0};
      if (::poll(&p, 1, 100) > 0 && ::recv(l.fd, &byte, 1, 0) <= 0) break;
    }
    close_quietly(l.fd);
  }
  links_.clear();
}

void WorkerLink::acknowledge_end() { close_quietly(master_fd_); }

// The two ways differ in where to look: a closed link means the master's entry point ended
// (its host is up); a failed one (keepalive: "Connection timed out") means the network between
// the two hosts broke, or the master's host went down: not necessarily the master's fault.
std::string WorkerLink::how_lost() const {
  if (lost_errno_ == 0) return master_closed_link(master_);
  return fmt::format("the link to the master {} failed ({})", master_, std::strerror(lost_errno_));
}

WorkerLink::~WorkerLink() {
  close_quietly(listen_fd_);
  close_quietly(master_fd_);
}

void WorkerLink::listen(const std::string& bind_address, int port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int on = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, bind_address.c_str(), &addr.sin_addr) != 1 ||
      ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 8) != 0) {
    int e = errno;
    close_quietly(listen_fd_);
    throw JobError::runtime(
        fmt::format("cannot listen on {}:{} for the master: {}", bind_address, port, std::strerror(e)));
  }
}

bool WorkerLink::accept_master(double wait_s) {
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  while (Clock::now() < deadline) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::string buffer;
    pollfd r{fd, POLLIN, 0};
    std::optional<std::string> hello;
    if (::poll(&r, 1, 5000) > 0) hello = read_line(fd, buffer);
    if (hello && hello->starts_with(std::string(kHello) + " ")) {
      // "<master> <version>", or "<master>" alone from a build before versions.
      std::istringstream words(hello->substr(std::string(kHello).size() + 1));
      std::string master;
      words >> master;
      const int theirs = version_in(*hello);
      send_all(fd, fmt::format("{} {}\n", kAnswer, kHostLinkVersion));
      if (theirs != kHostLinkVersion) {
        ::close(fd);
        throw JobError::runtime(other_version("the master " + master, theirs));
      }
      master_ = master;
      master_fd_ = fd;
      enable_keepalive(fd);
      close_quietly(listen_fd_);
      return true;
    }
    ::close(fd);  // not our master: keep waiting
  }
  return false;
}

std::optional<JobEnd> WorkerLink::wait_for_end() {
  std::string buffer;
  std::optional<std::string> line = read_line(master_fd_, buffer, &lost_errno_);
  if (!line || !line->starts_with("end ")) {
    close_quietly(master_fd_);
    return std::nullopt;
  }
  JobEnd end;
  std::istringstream words(line->substr(4));
  words >> end.exit_code;
  std::getline(words >> std::ws, end.reason);
  return end;
}

}  // namespace dtrain::job
