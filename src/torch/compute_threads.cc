// LibTorch's threads and CPU memory for a process (dtrain/torch_threads.h).
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>

#include "dtrain/error.h"
#include "dtrain/torch_threads.h"
#include "settings/env_setting.h"
#include "torch/reusing_cpu_allocator.h"

namespace dtrain::libtorch {

void set_num_threads(int threads) {
  if (threads < 1) throw Error("dtrain::set_num_threads: need at least 1 thread, got " + std::to_string(threads));
  at::set_num_threads(threads);
  // Found at run time: LibTorch may be linked against OpenBLAS or another BLAS.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

void retain_freed_memory() {
  // Blocks from 1 MiB are reused; at most DTRAIN_CPU_CACHE_MB (default 512) MiB sit idle.
  std::size_t cache_mb = 512;
  try {
    cache_mb = static_cast<std::size_t>(
        settings::env_integer("DTRAIN_CPU_CACHE_MB", 0, int64_t{1} << 30, "a number of MiB").value_or(512));
  } catch (const settings::SettingError& e) {
    throw Error(e.what());
  }
  // Never destroyed: tensors in static storage may be freed after main returns.
  static ReusingCpuAllocator* allocator = new ReusingCpuAllocator(std::size_t{1} << 20, cache_mb << 20);
  ReusingCpuAllocator::instance = allocator;
  c10::SetCPUAllocator(allocator, /*priority=*/1);
}

}  // namespace dtrain::libtorch
