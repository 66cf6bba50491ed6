#include "launch/job_supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "launch/flight_record_collector.h"
#include "launch/launch_error.h"
#include "launch/output_relay.h"
#include "launch/raw_output_files.h"
#include "launch/signal_channel.h"
#include "launch/worker_env.h"
#include "launch/worker_guardian.h"

namespace dtrain::launch {
namespace {

using Clock = std::chrono::steady_clock;

// One write() per call where the kernel allows it, so a relayed line is never
// split by another line; errors (a closed terminal) are ignored.
void write_fully(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// How long the launcher waits for the ranks' flight records: after SIGUSR1 before it prints
// what came, and after a failure that came with records before it stops the other ranks.
constexpr auto kRecordWait = std::chrono::seconds(3);

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

struct Worker {
  RankPlacement placement;
  SpawnRequest request;
  pid_t pid = -1;
  bool running = false;  // started and not yet reaped
  int stdout_fd = -1;
  int stderr_fd = -1;
  int stdin_fd = -1;
  std::unique_ptr<LineRelay> stdout_relay;
  std::unique_ptr<LineRelay> stderr_relay;
  std::unique_ptr<RawOutputFiles> raw;
  bool service = false;
  std::string name;
  bool rank_on_this_host = false;  // SIGUSR1 is passed on to it (WorkerLaunch)
  bool reported_ready = false;     // on_ready was called

  std::string who() const {
    if (!name.empty()) return fmt::format("{} (host {})", name, placement.host);
    return fmt::format("rank {} (host {})", placement.rank, placement.host);
  }
};

std::string describe_exit(const Worker& w, int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return fmt::format("{} was killed by signal {} ({})", w.who(), sig, signal_name(sig));
  }
  return fmt::format("{} exited with status {}", w.who(), WEXITSTATUS(status));
}

// The state of one job from first spawn to last reap.
class SupervisedJob {
 public:
  SupervisedJob(const SupervisorOptions& options, SignalChannel& signals, std::vector<WorkerLaunch> launches)
      : options_(options), signals_(signals) {
    for (auto& l : launches) add_worker(std::move(l));
  }

  int run() {
    launched_at_ = Clock::now();
    guardian_.emplace(options_.kill_grace_s);
    spawn_all();
    while (!finished()) {
      wait_for_events();
      handle_signals();
      reap();
      follow_elastic_control();
      stop_services_after_workers();
      check_start_timeout();
      report_readiness();
      check_time_limit();
      check_kill_deadline();
      check_records();
      note_all_reaped();
    }
    for (auto& w : workers_) close_streams(w);
    if (stopping_ || failure_) kill_groups(SIGKILL);  // whatever a failed job left behind
    reap();

    if (interrupt_signal_ != 0 && !failure_) return 128 + interrupt_signal_;
    if (failure_) {
      if (options_.on_failure) {
        options_.on_failure(*failure_);
      } else {
        write_fully(2, fmt::format("dtrain run: {}\n", failure_->description));
      }
      print_verdict();
      return 1;
    }
    print_verdict();  // asked for by SIGUSR1 as the job ended
    return 0;
  }

 private:
  void add_worker(WorkerLaunch l) {
    Worker w;
    w.placement = std::move(l.placement);
    w.request = std::move(l.request);
    w.service = l.service;
    w.name = std::move(l.name);
    w.rank_on_this_host = l.rank_on_this_host;
    int rank = w.placement.rank;
    if (options_.output_dir && !w.service) w.raw = std::make_unique<RawOutputFiles>(*options_.output_dir, rank);
    auto prefix = [&](std::string_view stream) {
      if (w.service) {
        return options_.prefix ? fmt::format("[{}:{}]<{}>:", w.placement.host, w.name, stream)
                               : fmt::format("[{}]<{}>:", w.name, stream);
      }
      return options_.prefix ? options_.prefix(w.placement, stream) : relay_prefix(rank, stream);
    };
    auto sink = [this, placement = w.placement](bool is_stderr) -> LineRelay::Sink {
      if (options_.line_sink) {
        return [this, placement, is_stderr](std::string_view line) { options_.line_sink(placement, is_stderr, line); };
      }
      return [is_stderr](std::string_view line) { write_fully(is_stderr ? 2 : 1, line); };
    };
    // A rank's flight record is the launcher's to read, not the user's: taken off stderr.
    auto stderr_sink = [this, relayed = sink(true), prefix_bytes = prefix("stderr").size()](std::string_view line) {
      std::string_view bare = line.substr(std::min(prefix_bytes, line.size()));
      if (bare.ends_with('\n')) bare.remove_suffix(1);
      if (!records_.take(bare)) {
        relayed(line);
      } else if (!verdict_at_) {
        // Written on an error, or asked for by `kill -USR1 <rank>`: the others' follow at once.
        verdict_at_ = Clock::now() + kRecordWait;
      }
    };
    w.stdout_relay = std::make_unique<LineRelay>(prefix("stdout"), sink(false));
    w.stderr_relay = std::make_unique<LineRelay>(prefix("stderr"), stderr_sink);
    workers_.push_back(std::move(w));
  }

  void spawn_all() {
    for (auto& w : workers_) {
      if (stopping_ || !spawn(w)) break;
    }
  }

  // Starts one worker; false when it could not be started (the job then fails).
  bool spawn(Worker& w) {
    SpawnedChild child;
    try {
      child = spawn_child(w.request);
    } catch (const LaunchError& e) {
      fail(fmt::format("{}: {}", w.who(), e.what()), &w);
      return false;
    }
    w.pid = child.pid;
    w.running = true;
    guardian_->watch(child.pid);  // the child leads a process group of its own id
    w.stdout_fd = child.stdout_fd;
    w.stderr_fd = child.stderr_fd;
    w.stdin_fd = child.stdin_fd;
    spdlog::debug("started {} as pid {}: {}", w.who(), w.pid, fmt::join(w.request.argv, " "));
    if (child.exec_errno != 0) {
      fail(fmt::format("{}: cannot execute '{}': {}", w.who(), w.request.argv[0], std::strerror(child.exec_errno)), &w);
      return false;
    }
    if (!w.service && options_.on_start) options_.on_start(w.placement, w.pid);
    return true;
  }

  // An elastic job: start the workers the control asks for, kill those it gave up on.
  void follow_elastic_control() {
    if (!options_.elastic || stopping_) return;
    ElasticControl::Actions actions = options_.elastic->step();
    for (int id : actions.stop) {
      for (auto& w : workers_) {
        if (w.running && w.placement.rank == id && !w.service) ::killpg(w.pid, SIGKILL);
      }
    }
    if (actions.failure) {
      fail(*actions.failure);
      return;
    }
    for (auto& launch : actions.start) {
      add_worker(std::move(launch));
      if (!spawn(workers_.back())) return;
    }
  }

  bool finished() const {
    if (options_.elastic && !stopping_ && !options_.elastic->done()) return false;
    bool any_running = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
    if (any_running) return false;
    bool any_open = std::any_of(workers_.begin(), workers_.end(),
                                [](const Worker& w) { return w.stdout_fd >= 0 || w.stderr_fd >= 0; });
    if (!any_open) return true;
    // Background processes a worker left behind may hold its pipes open.
    return drain_deadline_ && Clock::now() >= *drain_deadline_;
  }

  void wait_for_events() {
    std::vector<pollfd> fds;
    std::vector<std::pair<Worker*, bool>> owners;  // (worker, is_stdout) per fd after the first
    fds.push_back({signals_.fd(), POLLIN, 0});
    for (auto& w : workers_) {
      if (w.stdout_fd >= 0) {
        fds.push_back({w.stdout_fd, POLLIN, 0});
        owners.emplace_back(&w, true);
      }
      if (w.stderr_fd >= 0) {
        fds.push_back({w.stderr_fd, POLLIN, 0});
        owners.emplace_back(&w, false);
      }
    }

    int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready <= 0) return;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [worker, is_stdout] = owners[i - 1];
      read_stream(*worker, is_stdout);
    }
  }

  int poll_timeout_ms() const {
    auto now = Clock::now();
    auto next = now + (options_.elastic ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000));
    if (!stopping_ && options_.start_timeout_s > 0 && !start_checked_ && !options_.elastic) {
      next = std::min(next, launched_at_ + seconds(options_.start_timeout_s));
    }
    if (stopping_ && !killed_) next = std::min(next, kill_at_);
    if (!stopping_ && options_.time_limit_s > 0) {
      next = std::min(next, launched_at_ + seconds(options_.time_limit_s));
    }
    if (drain_deadline_) next = std::min(next, *drain_deadline_);
    if (stop_when_recorded_) next = std::min(next, *stop_when_recorded_);
    if (verdict_at_) next = std::min(next, *verdict_at_);
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::clamp<long long>(ms, 0, 1000));
  }

  // One read; whether bytes came (false at the end of the stream and when none wait).
  bool read_stream(Worker& w, bool is_stdout) {
    int& fd = is_stdout ? w.stdout_fd : w.stderr_fd;
    if (fd < 0) return false;
    LineRelay& relay = is_stdout ? *w.stdout_relay : *w.stderr_relay;
    ssize_t n;
    do {
      n = ::read(fd, buffer_, sizeof(buffer_));
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
      std::string_view bytes(buffer_, static_cast<size_t>(n));
      relay.feed(bytes);
      if (w.raw) is_stdout ? w.raw->write_stdout(bytes) : w.raw->write_stderr(bytes);
      return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    relay.finish();
    close_fd(fd);
    return false;
  }

  // What an exited worker wrote before it exited (its last lines: an error, a flight record),
  // relayed before its exit is judged; bounded, as a child it left may go on writing.
  void read_what_is_left(Worker& w) {
    for (int i = 0; i < 16 && read_stream(w, true); ++i) {}
    for (int i = 0; i < 16 && read_stream(w, false); ++i) {}
  }

  void close_streams(Worker& w) {
    if (w.stdout_fd >= 0) {
      w.stdout_relay->finish();
      close_fd(w.stdout_fd);
    }
    if (w.stderr_fd >= 0) {
      w.stderr_relay->finish();
      close_fd(w.stderr_fd);
    }
    close_fd(w.stdin_fd);
  }

  void handle_signals() {
    for (int sig : signals_.drain()) {
      if (sig == SIGCHLD) continue;  // reap() runs after every wakeup
      if (sig == SIGUSR1) {
        ask_for_records();
        continue;
      }
      if (interrupt_signal_ == 0 && !stopping_) {
        interrupt_signal_ = sig;
        write_fully(2, fmt::format("dtrain run: caught {}, stopping {} worker{}\n", signal_name(sig), workers_.size(),
                                   workers_.size() == 1 ? "" : "s"));
        begin_stop(sig);
      } else if (!killed_) {
        // A second interrupt: do not wait out the grace period.
        if (interrupt_signal_ == 0) interrupt_signal_ = sig;
        kill_groups(SIGKILL);
        killed_ = true;
      }
    }
  }

  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it =
          std::find_if(workers_.begin(), workers_.end(), [pid](const Worker& w) { return w.pid == pid && w.running; });
      if (it == workers_.end()) continue;
      note_ready(*it);  // a worker may post ready and exit between two looks
      it->running = false;
      read_what_is_left(*it);
      close_fd(it->stdin_fd);
      spdlog::debug("{}", describe_exit(*it, status));
      if (options_.on_exit) options_.on_exit(it->placement, status);
      bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (stopping_) continue;
      if (options_.elastic && !it->service && options_.elastic->worker_ended(it->placement, status)) continue;
      if (it->service) {
        fail(fmt::format("{} while the workers were training", describe_exit(*it, status)), &*it, status);
      } else if (!success && options_.tolerate_worker_failures && it->placement.rank != 0) {
        write_fully(2, fmt::format("dtrain run: {}; the other workers go on without it\n", describe_exit(*it, status)));
      } else if (!success && options_.tolerate_failure && options_.tolerate_failure(it->placement, status)) {
        continue;  // the caller reported it; the others go on
      } else if (!success) {
        fail(describe_exit(*it, status), &*it, status);
      }
    }
  }

  // Services exist for the workers: once the last worker is gone, stop them (not a failure).
  void stop_services_after_workers() {
    if (stopping_) return;
    bool any_service = false;
    for (const auto& w : workers_) {
      if (!w.service && w.running) return;
      any_service = any_service || (w.service && w.running);
    }
    if (any_service) begin_stop(SIGTERM);
  }

  void check_start_timeout() {
    if (stopping_ || start_checked_ || options_.start_timeout_s <= 0 || options_.elastic) return;
    if (Clock::now() < launched_at_ + seconds(options_.start_timeout_s)) return;
    start_checked_ = true;
    for (const auto& w : workers_) {
      if (w.running && !options_.is_ready(w.placement.rank)) {
        fail(fmt::format("{} did not reach rendezvous within {} s", w.who(),
                         format_env_number(options_.start_timeout_s)),
             &w);
        return;
      }
    }
  }

  // on_ready once per worker that has posted ready (an elastic worker's number is not the
  // rank it posts as, so elastic jobs report none).
  void report_readiness() {
    for (auto& w : workers_) {
      if (w.running) note_ready(w);
    }
  }

  void note_ready(Worker& w) {
    if (!options_.on_ready || options_.elastic || w.service || w.reported_ready) return;
    if (!options_.is_ready(w.placement.rank)) return;
    w.reported_ready = true;
    options_.on_ready(w.placement);
  }

  void check_time_limit() {
    if (stopping_ || failure_ || options_.time_limit_s <= 0) return;
    if (Clock::now() < launched_at_ + seconds(options_.time_limit_s)) return;
    fail(fmt::format("time limit of {} s exceeded", format_env_number(options_.time_limit_s)));
  }

  void check_kill_deadline() {
    if (stopping_ && !killed_ && Clock::now() >= kill_at_) {
      spdlog::debug("grace period over, sending SIGKILL");
      kill_groups(SIGKILL);
      killed_ = true;
    }
  }

  void note_all_reaped() {
    if (drain_deadline_) return;
    bool any_running = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
    if (any_running) return;
    if (stopping_ || failure_) {
      // The leaders are gone; anything left in their groups goes too.
      kill_groups(SIGKILL);
      killed_ = true;
    }
    drain_deadline_ = Clock::now() + std::chrono::seconds(1);
  }

  void fail(std::string message, const Worker* who = nullptr, std::optional<int> wait_status = std::nullopt) {
    if (!failure_) {
      failure_ = WorkerFailure{who ? who->placement : RankPlacement{}, std::move(message), wait_status};
      if (!who) failure_->placement.rank = -1;
    }
    // A failure that comes with flight records (a stall, a timeout): the other ranks are
    // writing theirs at the same moment; they get kRecordWait to finish before they stop.
    if (!records_.empty() && !records_.has_every_rank(world_size()) && !stopping_) {
      if (!stop_when_recorded_) stop_when_recorded_ = Clock::now() + kRecordWait;
      return;
    }
    begin_stop(SIGTERM);
  }

  // The ranks the verdict speaks of: as the records say (an elastic job's world is theirs),
  // else the workers started.
  int world_size() const {
    const int recorded = records_.world_size();
    if (recorded > 0) return recorded;
    return static_cast<int>(
        std::count_if(workers_.begin(), workers_.end(), [](const Worker& w) { return !w.service; }));
  }

  // SIGUSR1: every rank on this machine writes its flight record; the verdict follows when all
  // ranks' have come, or after kRecordWait with those that did.
  void ask_for_records() {
    if (failure_ || stopping_) return;  // the failure's records are on their way, or in
    records_.clear();
    int asked = 0, elsewhere = 0;
    for (auto& w : workers_) {
      if (!w.running || w.service) continue;
      if (!w.rank_on_this_host) {
        ++elsewhere;
      } else if (::kill(w.pid, SIGUSR1) == 0) {
        ++asked;
      }
    }
    std::string message = fmt::format("dtrain run: caught SIGUSR1, asking {} rank{} for their flight records", asked,
                                      asked == 1 ? "" : "s");
    if (elsewhere > 0) {
      message += fmt::format(
          " ({} on other hosts or under mpirun/srun: `kill -USR1` them there, then `dtrain "
          "flight-record`)",
          elsewhere);
    }
    write_fully(2, message + "\n");
    if (asked > 0) verdict_at_ = Clock::now() + kRecordWait;
  }

  void check_records() {
    const bool all = records_.has_every_rank(world_size());
    if (stop_when_recorded_ && (all || Clock::now() >= *stop_when_recorded_)) {
      stop_when_recorded_.reset();
      begin_stop(SIGTERM);
    }
    if (verdict_at_ && (all || Clock::now() >= *verdict_at_)) {
      verdict_at_.reset();
      print_verdict();
    }
  }

  void print_verdict() {
    if (records_.empty()) return;
    write_fully(2, fmt::format("dtrain run: {}\n", records_.verdict(world_size())));
    records_.clear();
  }

  void begin_stop(int sig) {
    if (stopping_) return;
    stopping_ = true;
    kill_at_ = Clock::now() + seconds(options_.kill_grace_s);
    for (auto& w : workers_) close_fd(w.stdin_fd);
    for (auto& w : workers_) {
      if (w.running) ::killpg(w.pid, sig);
    }
  }

  void kill_groups(int sig) {
    for (auto& w : workers_) {
      if (w.pid > 0) ::killpg(w.pid, sig);
    }
  }

  const SupervisorOptions& options_;
  SignalChannel& signals_;
  std::vector<Worker> workers_;
  std::optional<WorkerGuardian> guardian_;  // stops the groups if this launcher is killed outright
  Clock::time_point launched_at_{};
  Clock::time_point kill_at_{};
  std::optional<Clock::time_point> drain_deadline_;
  bool stopping_ = false;
  bool killed_ = false;
  bool start_checked_ = false;
  int interrupt_signal_ = 0;
  std::optional<WorkerFailure> failure_;
  FlightRecordCollector records_;
  std::optional<Clock::time_point> stop_when_recorded_;  // a failure waits for the ranks' records until then
  std::optional<Clock::time_point> verdict_at_;          // SIGUSR1: the verdict is printed by then
  char buffer_[64 * 1024];
};

}  // namespace

JobSupervisor::JobSupervisor(SupervisorOptions options, SignalChannel& signals)
    : options_(std::move(options)), signals_(signals) {}

int JobSupervisor::run(std::vector<WorkerLaunch> workers) {
  SupervisedJob job(options_, signals_, std::move(workers));
  return job.run();
}

}  // namespace dtrain::launch
