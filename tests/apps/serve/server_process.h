#pragma once

// `dtrain serve` as a child process for tests: on 127.0.0.1 and a port the
// kernel picks (--port 0, read back from the log), waited for until /ping
// answers 200, and always killed: the destructor sends SIGKILL to a server
// still running, so a failing test leaves no process behind.
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace dtrain::serve::testing {

class ServerProcess {
 public:
  // Starts `program` (dtrain or dtrain-serve) with `arguments`, output to `log_path`.
  ServerProcess(const std::string& program, const std::vector<std::string>& arguments, std::string log_path)
      : log_path_(std::move(log_path)) {
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    for (const char* own : {"--host", "127.0.0.1", "--port", "0"}) argv.push_back(own);
    pid_ = fork();
    if (pid_ == 0) {
      std::FILE* log = std::fopen(log_path_.c_str(), "w");
      if (log) {
        dup2(fileno(log), 1);
        dup2(fileno(log), 2);
      }
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exit_code_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Waits for the port in the log, then for /ping 200. False (with the log
  // in `why`) when the process exits or `timeout` passes first.
  bool wait_ready(std::chrono::seconds timeout, std::string& why) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::regex listening(R"(listening on 127\.0\.0\.1:(\d+))");
    while (std::chrono::steady_clock::now() < deadline) {
      if (exited()) {
        why = "the server exited with " + std::to_string(*exit_code_) + ":\n" + log();
        return false;
      }
      std::smatch match;
      const std::string text = log();
      if (port_ == 0 && std::regex_search(text, match, listening)) port_ = std::stoi(match[1]);
      if (port_ != 0) {
        httplib::Client client("127.0.0.1", port_);
        client.set_connection_timeout(1, 0);
        auto ping = client.Get("/ping");
        if (ping && ping->status == 200) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    why = "the server was not ready in time:\n" + log();
    return false;
  }

  // SIGTERM, then the exit code (or nullopt if it did not exit in `timeout`).
  std::optional<int> terminate(std::chrono::seconds timeout) {
    kill(pid_, SIGTERM);
    return wait_exit(timeout);
  }

  std::optional<int> wait_exit(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return exit_code_;
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    c.set_connection_timeout(5, 0);
    c.set_tcp_nodelay(true);
    return c;
  }

  // Resident memory in KiB (VmRSS), 0 when unknown.
  long resident_kib() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return 0;
  }

  std::string log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }

 private:
  bool exited() {
    if (exit_code_) return true;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return true;
    }
    return false;
  }

  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::optional<int> exit_code_;
};

}  // namespace dtrain::serve::testing
