#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtrain::job {

// How the hosts of a local job are made.
//   process: every host is a directory on this machine; its name maps to its
//            own loopback address 127.0.0.N; no privileges needed.
//   netns:   every host is also a Linux network namespace with an eth0 on a
//            bridge private to the job (10.213.0.N/24, no address in the
//            root namespace) and its own /etc/hosts (/etc/netns/<ns>/hosts);
//            needs root.
enum class HostKind { kProcess, kNetns };

HostKind parse_host_kind(const std::string& text);  // throws JobError (usage)
std::string to_string(HostKind kind);

// One host of a local job.
struct LocalHost {
  std::string name;     // algo-1
  std::string address;  // 127.0.0.1 / 10.213.0.1
  std::string root;     // its /opt/ml
  std::string netns;    // empty for process hosts
  // The host's own directory for Open MPI's files (/dev/shm/dtrain-<pid>-algo-N). The hosts
  // share this machine's /tmp, /dev/shm and host name, and Open MPI names its session
  // directory (/tmp/ompi.<hostname>.<uid>/jf.<job family>, with the daemon's hwloc topology
  // and PMIx store) and its shared-memory segments by host name and job: daemons and ranks of
  // two hosts would create and map each other's. `dtrain job host-exec` points Open MPI here
  // (OMPI_MCA_orte_tmpdir_base, OMPI_MCA_btl_vader_backing_directory).
  std::string shm_dir;
};

// The host table a job's processes read (dtrain job host-exec, the entry
// point's name resolution): {"kind", "hosts": [{name, address, root, netns, shm_dir}]}.
nlohmann::ordered_json host_table_json(HostKind kind, const std::vector<LocalHost>& hosts);
std::vector<LocalHost> hosts_from_table(const nlohmann::ordered_json& table);

// The hosts of one local job, created in the constructor and removed (with
// every process still running in a namespace) in the destructor. Names made
// for netns hosts and shared-memory directories carry the owning process id
// (netns "dtrain-<pid>-algo-N", links "dtj<pid hex>...", /dev/shm/dtrain-<pid>-algo-N),
// so a later run can tell leftovers of a crashed run from those of a live one.
class LocalCluster {
 public:
  LocalCluster(HostKind kind, const std::string& work_dir, int host_count);
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  HostKind kind() const { return kind_; }
  const std::vector<LocalHost>& hosts() const { return hosts_; }
  std::string network_interface() const { return kind_ == HostKind::kNetns ? "eth0" : "lo"; }

  // The argv prefix that runs a program "on" a host ({"ip","netns","exec",ns}
  // or nothing).
  std::vector<std::string> exec_prefix(const LocalHost& host) const;

  // /etc/hosts-style file naming every host (DTRAIN_HOSTS_FILE) and the host
  // table (for dtrain job host-exec), both under the work directory.
  const std::string& hosts_file() const { return hosts_file_; }
  const std::string& table_file() const { return table_file_; }

  // Kills every process still running inside the job's namespaces; returns
  // how many there were (0 for process hosts).
  int kill_remaining_processes();

  // Removes namespaces, links and /etc/netns entries; idempotent.
  void teardown();

 private:
  void create_netns();

  HostKind kind_;
  std::string work_dir_;
  std::vector<LocalHost> hosts_;
  std::string bridge_;
  std::string hosts_file_;
  std::string table_file_;
  bool torn_down_ = false;
};

// Removes netns hosts, links and /etc/netns directories whose owning
// process is gone (a crashed run). Returns how many things were removed.
int sweep_stale_netns();

// Removes the hosts' shared-memory directories whose owning process is gone.
int sweep_stale_shm_dirs();

// Whether this process may create network namespaces (root).
bool can_create_netns();

}  // namespace dtrain::job
