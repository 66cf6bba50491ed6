#include "job/local_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "job/container_layout.h"
#include "job/job_error.h"
#include "job/system_command.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNetnsPrefix = "dtrain-";  // dtrain-<pid>-algo-N
constexpr const char* kLinkPrefix = "dtj";       // dtj<6 hex pid>b / dtj<6 hex pid>v<N>
constexpr const char* kSubnet = "10.213.0";
constexpr const char* kShmBase = "/dev/shm";

bool process_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

std::string link_stem() { return fmt::format("{}{:06x}", kLinkPrefix, ::getpid() & 0xFFFFFF); }

std::vector<std::string> netns_list() {
  std::vector<std::string> names;
  CommandResult r = run_command({"ip", "netns", "list"}, 30);
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::string name = line.substr(0, line.find(' '));
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

void kill_pids_in(const std::string& ns, int& killed) {
  CommandResult r = run_command({"ip", "netns", "pids", ns}, 30);
  std::istringstream pids(r.output);
  for (long pid; pids >> pid;) {
    if (pid > 1 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++killed;
  }
}

}  // namespace

HostKind parse_host_kind(const std::string& text) {
  if (text == "process") return HostKind::kProcess;
  if (text == "netns") return HostKind::kNetns;
  throw JobError::usage(fmt::format("--hosts must be process or netns, got '{}'", text));
}

std::string to_string(HostKind kind) { return kind == HostKind::kNetns ? "netns" : "process"; }

bool can_create_netns() { return ::geteuid() == 0; }

nlohmann::ordered_json host_table_json(HostKind kind, const std::vector<LocalHost>& hosts) {
  nlohmann::ordered_json table;
  table["kind"] = to_string(kind);
  table["hosts"] = nlohmann::ordered_json::array();
  for (const auto& h : hosts) {
    table["hosts"].push_back(
        {{"name", h.name}, {"address", h.address}, {"root", h.root}, {"netns", h.netns}, {"shm_dir", h.shm_dir}});
  }
  return table;
}

std::vector<LocalHost> hosts_from_table(const nlohmann::ordered_json& table) {
  std::vector<LocalHost> hosts;
  if (!table.contains("hosts")) return hosts;
  for (const auto& h : table["hosts"]) {
    hosts.push_back({h.value("name", ""), h.value("address", ""), h.value("root", ""), h.value("netns", ""),
                     h.value("shm_dir", "")});
  }
  return hosts;
}

int sweep_stale_netns() {
  if (!can_create_netns()) return 0;
  int removed = 0;
  static const std::regex ns_pattern("^dtrain-([0-9]+)-.*$");
  for (const auto& ns : netns_list()) {
    std::smatch m;
    if (!std::regex_match(ns, m, ns_pattern) || process_alive(std::stol(m[1].str()))) continue;
    int killed = 0;
    kill_pids_in(ns, killed);
    if (run_command({"ip", "netns", "del", ns}, 30).ok()) ++removed;
    spdlog::info("removed leftover network namespace {} of a dead run", ns);
  }
  static const std::regex link_pattern("^\\d+: (dtj([0-9a-f]{6})[^:@]*)[:@].*$");
  CommandResult links = run_command({"ip", "-o", "link", "show"}, 30);
  std::istringstream lines(links.output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, link_pattern)) continue;
    if (process_alive(std::stol(m[2].str(), nullptr, 16))) continue;
    if (run_command({"ip", "link", "del", m[1].str()}, 30).ok()) ++removed;
  }
  std::error_code ec;
  for (auto it = fs::directory_iterator("/etc/netns", ec); !ec && it != fs::end(it); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, ns_pattern) && !process_alive(std::stol(m[1].str()))) {
      fs::remove_all(it->path(), ec);
      ++removed;
    }
  }
  return removed;
}

int sweep_stale_shm_dirs() {
  int removed = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(kShmBase, ec); !ec && it != fs::end(it); it.increment(ec)) {
    // Only the hosts' directories: the runtime's own segments (dtrain-<pid>-<job>-...) are files.
    static const std::regex pattern("^dtrain-([0-9]+)-algo-[0-9]+$");
    std::string name = it->path().filename().string();
    std::smatch m;
    std::error_code type;
    if (!std::regex_match(name, m, pattern) || !it->is_directory(type)) continue;
    if (process_alive(std::stol(m[1].str()))) continue;
    std::error_code rm;
    if (fs::remove_all(it->path(), rm) > 0 && !rm) ++removed;
  }
  return removed;
}

LocalCluster::LocalCluster(HostKind kind, const std::string& work_dir, int host_count)
    : kind_(kind), work_dir_(work_dir) {
  if (host_count < 1 || host_count > 250) {
    throw JobError::usage(fmt::format("instance_count must be 1..250 for local hosts, got {}", host_count));
  }
  std::error_code ec;
  fs::create_directories(work_dir_ + "/hosts", ec);
  sweep_stale_shm_dirs();
  bool have_shm = fs::is_directory(kShmBase, ec);
  for (int i = 1; i <= host_count; ++i) {
    LocalHost h;
    h.name = fmt::format("algo-{}", i);
    h.root = fmt::format("{}/hosts/{}", work_dir_, h.name);
    h.address = kind == HostKind::kNetns ? fmt::format("{}.{}", kSubnet, i) : fmt::format("127.0.0.{}", i);
    if (kind == HostKind::kNetns) h.netns = fmt::format("{}{}-{}", kNetnsPrefix, ::getpid(), h.name);
    h.shm_dir = have_shm ? fmt::format("{}/{}{}-{}", kShmBase, kNetnsPrefix, ::getpid(), h.name)
                         : fmt::format("{}/hosts/{}.shm", work_dir_, h.name);
    fs::create_directories(h.root, ec);
    fs::create_directories(h.shm_dir, ec);
    if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", h.shm_dir, ec.message()));
    hosts_.push_back(h);
  }
  std::string hosts_text = "127.0.0.1 localhost\n";
  for (const auto& h : hosts_) hosts_text += fmt::format("{} {}\n", h.address, h.name);
  hosts_file_ = work_dir_ + "/etc-hosts";
  table_file_ = work_dir_ + "/hosts.json";
  write_text_file(hosts_file_, hosts_text);
  write_text_file(table_file_, host_table_json(kind_, hosts_).dump(2) + "\n");

  if (kind_ == HostKind::kNetns) {
    if (!can_create_netns()) {
      throw JobError::usage("--hosts netns needs root (it creates network namespaces); use --hosts process");
    }
    try {
      create_netns();
    } catch (...) {
      teardown();
      throw;
    }
  }
}

LocalCluster::~LocalCluster() {
  try {
    teardown();
  } catch (const std::exception& e) {
    spdlog::warn("removing the job's hosts: {}", e.what());
  }
}

void LocalCluster::create_netns() {
  sweep_stale_netns();
  std::string stem = link_stem();
  bridge_ = stem + "b";
  run_command_or_throw({"ip", "link", "add", bridge_, "type", "bridge"});
  run_command_or_throw({"ip", "link", "set", bridge_, "up"});
  std::string hosts_text = read_text_file(hosts_file_);
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const LocalHost& h = hosts_[i];
    std::string veth = fmt::format("{}v{}", stem, i + 1);
    run_command_or_throw({"ip", "netns", "add", h.netns});
    write_text_file(fmt::format("/etc/netns/{}/hosts", h.netns), hosts_text);
    run_command_or_throw({"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", h.netns});
    run_command_or_throw({"ip", "link", "set", veth, "master", bridge_, "up"});
    run_command_or_throw({"ip", "-n", h.netns, "addr", "add", h.address + "/24", "dev", "eth0"});
    run_command_or_throw({"ip", "-n", h.netns, "link", "set", "eth0", "up"});
    run_command_or_throw({"ip", "-n", h.netns, "link", "set", "lo", "up"});
  }
  spdlog::info("created {} network namespaces on bridge {}", hosts_.size(), bridge_);
}

std::vector<std::string> LocalCluster::exec_prefix(const LocalHost& host) const {
  if (kind_ == HostKind::kNetns) return {"ip", "netns", "exec", host.netns};
  return {};
}

int LocalCluster::kill_remaining_processes() {
  int killed = 0;
  if (kind_ != HostKind::kNetns) return 0;
  for (const auto& h : hosts_) {
    if (!h.netns.empty()) kill_pids_in(h.netns, killed);
  }
  return killed;
}

void LocalCluster::teardown() {
  if (torn_down_) return;
  torn_down_ = true;
  if (kind_ == HostKind::kNetns) kill_remaining_processes();
  for (const auto& h : hosts_) {
    std::error_code ec;
    if (!h.shm_dir.empty()) fs::remove_all(h.shm_dir, ec);
  }
  if (kind_ != HostKind::kNetns) return;
  std::string stem = link_stem();
  for (size_t i = 0; i < hosts_.size(); ++i) {
    const LocalHost& h = hosts_[i];
    if (h.netns.empty()) continue;
    // Deleting the namespace would remove the pair too, but asynchronously.
    run_command({"ip", "link", "del", fmt::format("{}v{}", stem, i + 1)}, 30);
    run_command({"ip", "netns", "del", h.netns}, 30);
    std::error_code ec;
    fs::remove_all("/etc/netns/" + h.netns, ec);
  }
  if (!bridge_.empty()) run_command({"ip", "link", "del", bridge_}, 30);
}

}  // namespace dtrain::job
