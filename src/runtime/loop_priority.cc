#include "runtime/loop_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "runtime/environment.h"
#include "runtime/gpu/device_memory.h"
#include "runtime/logging.h"

namespace dtrain::runtime {

int background_nice(const RuntimeConfig& config, int usable_cores, int (*cuda_devices)()) {
  if (config.background_nice >= 0) return config.background_nice;
  return config.local_size >= usable_cores && cuda_devices() == 0 ? 19 : 0;
}

int usable_cores() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  return std::max(1, CPU_COUNT(&cpus));
}

void lower_loop_thread_priority(const RuntimeConfig& config) {
  const int cores = usable_cores();
  const int nice = background_nice(config, cores, gpu::visible_cuda_devices);
  if (nice == 0) return;
  // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value alone.
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice) != 0) {
    log().warn("the background thread keeps the default priority: setting nice {} failed: {}", nice,
               std::strerror(errno));
    return;
  }
  if (config.rank == 0) {
    log().info("the background thread runs at nice {} ({}: {} ranks on this host, {} usable cores)", nice,
               config.background_nice >= 0 ? "DTRAIN_BACKGROUND_NICE" : "automatic", config.local_size, cores);
  }
}

}  // namespace dtrain::runtime
