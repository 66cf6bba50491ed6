#include "torch/reusing_cpu_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace dtrain::libtorch {
namespace {

constexpr std::size_t kAlignment = 64;       // LibTorch's CPU alignment (AVX-512 loads)
constexpr std::size_t kGranule = 64 * 1024;  // sizes rounded up so near-equal shapes share blocks

void* aligned_alloc_or_throw(std::size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlignment, bytes) != 0) throw std::bad_alloc();
  return p;
}

}  // namespace

ReusingCpuAllocator* ReusingCpuAllocator::instance = nullptr;

ReusingCpuAllocator::ReusingCpuAllocator(std::size_t min_block_bytes, std::size_t max_cached_bytes)
    : min_block_bytes_(min_block_bytes), max_cached_bytes_(max_cached_bytes) {}

ReusingCpuAllocator::~ReusingCpuAllocator() {
  for (auto& [bytes, blocks] : idle_) {
    for (void* block : blocks) std::free(block);
  }
}

c10::DataPtr ReusingCpuAllocator::allocate(std::size_t bytes) {
  const std::size_t rounded =
      bytes < min_block_bytes_ ? std::max(bytes, kAlignment) : (bytes + kGranule - 1) / kGranule * kGranule;
  void* data = nullptr;
  {
    concurrency::MutexLock lock(mutex_);
    auto it = idle_.find(rounded);
    if (it != idle_.end() && !it->second.empty()) {
      data = it->second.back();
      it->second.pop_back();
      idle_bytes_ -= rounded;
    }
  }
  if (!data) data = aligned_alloc_or_throw(rounded);
  if (rounded >= min_block_bytes_) {
    concurrency::MutexLock lock(mutex_);
    live_[data] = rounded;
  }
  return {data, data, &ReusingCpuAllocator::release, c10::Device(c10::DeviceType::CPU)};
}

void ReusingCpuAllocator::release(void* data) { instance->put(data); }

void ReusingCpuAllocator::put(void* data) const {
  if (!data) return;
  {
    concurrency::MutexLock lock(mutex_);
    auto it = live_.find(data);
    if (it != live_.end()) {
      const std::size_t bytes = it->second;
      live_.erase(it);
      if (idle_bytes_ + bytes <= max_cached_bytes_) {
        idle_[bytes].push_back(data);
        idle_bytes_ += bytes;
        return;
      }
    }
  }
  std::free(data);
}

std::size_t ReusingCpuAllocator::cached_bytes() const {
  concurrency::MutexLock lock(mutex_);
  return idle_bytes_;
}

}  // namespace dtrain::libtorch
