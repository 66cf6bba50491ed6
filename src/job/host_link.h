#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::job {

// The address of a host name: DTRAIN_HOSTS_FILE (an /etc/hosts-style file
// the local job runner writes) first, then the system resolver. nullopt when
// neither knows it.
std::optional<std::string> resolve_host(const std::string& name);

// The protocol of the links between the master's and the workers' entry points, exchanged
// in the first message each way: hosts of different dtrain builds are refused, naming both.
inline constexpr int kHostLinkVersion = 1;

// The entry point's TCP port for master <-> worker links (DTRAIN_HOST_PORT,
// default 29417).
int host_link_port();

// How a worker says that the master's entry point ended without reporting the end (it closed
// the link, its host up): "the master algo-1 closed the link". Not a lost worker host: the job
// ends with the master.
std::string master_closed_link(const std::string& master);

// How the master reports the end of the job to a worker.
struct JobEnd {
  int exit_code = 0;
  std::string reason;  // empty on success
};

// The master's side: one connection per other host. Connecting proves the
// host is up (its entry point is listening); the connection stays open for
// the whole job, so a worker notices when the master disappears.
class MasterLinks {
 public:
  MasterLinks() = default;
  ~MasterLinks();
  MasterLinks(const MasterLinks&) = delete;
  MasterLinks& operator=(const MasterLinks&) = delete;

  // Connects to every host in `hosts` (retrying every 0.5 s until `wait_s`); throws JobError
  // naming the hosts it could not reach, or a host of another protocol version and both versions.
  void connect_all(const std::vector<std::string>& hosts, const std::string& master, int port, double wait_s);

  // Sends the job's end to every connected worker, waits (up to `ack_wait_s`) for each to
  // acknowledge it, and closes the links. The master's exit ends the job, and whatever
  // supervises the hosts then stops them: without the wait, a worker could be stopped before
  // it has recorded the end it was told.
  void report_end(const JobEnd& end, double ack_wait_s = 10);

 private:
  struct Link {
    std::string host;
    int fd = -1;
  };
  std::vector<Link> links_;
};

// A worker's side: listens for the master, then waits for the job's end.
class WorkerLink {
 public:
  WorkerLink() = default;
  ~WorkerLink();
  WorkerLink(const WorkerLink&) = delete;
  WorkerLink& operator=(const WorkerLink&) = delete;

  // Listens on `bind_address`:`port` ("0.0.0.0" for any). Throws JobError.
  void listen(const std::string& bind_address, int port);

  // Waits up to `wait_s` for the master to connect; false on timeout. Throws JobError naming
  // both versions when the master speaks another protocol version.
  bool accept_master(double wait_s);

  // Blocks until the master reports the end (returned) or the connection
  // drops without a report (nullopt: see how_lost()).
  std::optional<JobEnd> wait_for_end();
  // Why wait_for_end() saw no end: "the master algo-1 closed the link", or "the link to the
  // master algo-1 failed (Connection timed out)" when the network broke (TCP keepalive
  // notices a silent peer within about 11 s).
  std::string how_lost() const;
  // Tells the master the end has been recorded (closes the link); the master waits for it.
  void acknowledge_end();

  const std::string& master() const { return master_; }

 private:
  int listen_fd_ = -1;
  int master_fd_ = -1;
  std::string master_;
  int lost_errno_ = 0;  // the link's error when it failed, 0 when the master closed it
};

}  // namespace dtrain::job
