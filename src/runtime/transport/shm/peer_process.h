// Whether a peer process on this host is gone: what the shared-memory paths check while they
// wait for a peer, so a dead local rank is a WorkersLostError at once, not after the timeout.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cerrno>

namespace dtrain::runtime {

// True when no process `pid` exists (0: not known yet, never gone). A process we may not
// signal (EPERM) exists.
inline bool process_gone(pid_t pid) { return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace dtrain::runtime
