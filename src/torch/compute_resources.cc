// Where and with how many threads a rank computes.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <c10/core/CPUAllocator.h>

#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "dtrain/torch.h"
#include "torch/reusing_cpu_allocator.h"

namespace dtrain::libtorch {

at::Device pin_device() {
  if (at::globalContext().hasCUDA()) {
    const int count = c10::impl::getDeviceGuardImpl(at::kCUDA)->deviceCount();
    if (count > 0) {
      const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank() % count));
      c10::impl::getDeviceGuardImpl(at::kCUDA)->setDevice(device);
      return device;
    }
  }
  return at::Device(at::kCPU);
}

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
  if (const char* env = std::getenv("DTRAIN_CPU_CACHE_MB")) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(env, &end, 10);
    if (*env == '\0' || *end != '\0' || value > (1ull << 30)) {
      throw Error(std::string("DTRAIN_CPU_CACHE_MB must be a number of MiB, got '") + env + "'");
    }
    cache_mb = static_cast<std::size_t>(value);
  }
  // Never destroyed: tensors in static storage may be freed after main returns.
  static ReusingCpuAllocator* allocator = new ReusingCpuAllocator(std::size_t{1} << 20, cache_mb << 20);
  ReusingCpuAllocator::instance = allocator;
  c10::SetCPUAllocator(allocator, /*priority=*/1);
}

}  // namespace dtrain::libtorch
