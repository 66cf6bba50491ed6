#include "runtime/record_on_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "concurrency/mutex.h"
#include "runtime/flight_recorder.h"
#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

int wake_pipe[2] = {-1, -1};  // the handler writes [1]; the recording thread reads [0]

void on_sigusr1(int) {
  const int saved = errno;
  const char byte = 1;
  [[maybe_unused]] const ssize_t ignored = ::write(wake_pipe[1], &byte, 1);
  errno = saved;
}

concurrency::Mutex& target_mutex() {
  static concurrency::Mutex mutex;
  return mutex;
}

const FlightRecorder* target = nullptr;  // guarded by target_mutex()

void record_on_each_wake() {
  char byte;
  while (true) {
    const ssize_t n = ::read(wake_pipe[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    concurrency::MutexLock lock(target_mutex());
    if (target) target->write("SIGUSR1");
  }
}

// Once per process: the pipe, the thread and the handler; false where SIGUSR1 is the program's.
bool install() {
  struct sigaction current {};
  if (::sigaction(SIGUSR1, nullptr, &current) != 0) return false;
  // Ignored is how `dtrain run` starts its ranks (local_spawner.cc), not a choice of the program's.
  if (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN) return false;
  if (::pipe2(wake_pipe, O_CLOEXEC) != 0) return false;
  // A handler must never block: with the pipe full, the byte already there will do.
  ::fcntl(wake_pipe[1], F_SETFL, O_NONBLOCK);
  // The thread lives as long as the process; it holds nothing a shutdown must release.
  std::thread(record_on_each_wake).detach();
  struct sigaction action {};
  action.sa_handler = on_sigusr1;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  return ::sigaction(SIGUSR1, &action, nullptr) == 0;
}

}  // namespace

void record_on_sigusr1(const FlightRecorder* recorder) {
  static const bool installed = install();
  if (!installed) {
    log().debug("flight recorder: SIGUSR1 has a handler of the program's; it will not write the record");
    return;
  }
  concurrency::MutexLock lock(target_mutex());
  target = recorder;
}

void forget_for_sigusr1(const FlightRecorder* recorder) {
  concurrency::MutexLock lock(target_mutex());
  if (target == recorder) target = nullptr;
}

}  // namespace dtrain::runtime
