// Ends what a launcher's workers started when the launcher itself is killed outright (SIGKILL,
// the OOM killer) and cannot stop them. Each worker leads its own process group and gets a
// parent-death signal, which ends the worker but not what it started (a shell's commands, data
// loader processes): those are left in the worker's group. The guardian is a small process
// forked before the workers, in a process group of its own; the launcher tells it over a
// socket which groups to watch. When the socket closes without word of a normal end, the
// launcher is gone: the guardian sends every watched group SIGTERM and, after the grace,
// SIGKILL. Between fork and exit it makes only async-signal-safe calls (the launcher has
// threads).
#pragma once

#include <sys/types.h>

namespace dtrain::launch {

class WorkerGuardian {
 public:
  // Forks the guardian. If that fails, says so in the log and guards nothing.
  explicit WorkerGuardian(double kill_grace_s);
  // A normal end: the guardian exits without touching any group.
  ~WorkerGuardian();
  WorkerGuardian(const WorkerGuardian&) = delete;
  WorkerGuardian& operator=(const WorkerGuardian&) = delete;

  // Like the launcher's own kill_groups(), it keeps a group after its leader exits: what the
  // leader started may still run there (and the id is not reused while the group exists).
  void watch(pid_t group);

 private:
  int socket_ = -1;
  pid_t pid_ = -1;
};

}  // namespace dtrain::launch
