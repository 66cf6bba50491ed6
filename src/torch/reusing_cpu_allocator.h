#pragma once

// A CPU allocator for LibTorch that keeps freed large blocks and hands them
// out again for allocations of the same size. A training or inference step
// allocates the same tensor sizes every step; glibc serves each large one
// (above its mmap threshold, 32 MiB at most) with fresh pages and unmaps it
// on free, so the kernel faults in and zeroes gigabytes per step. Reusing
// exact sizes avoids that without the fragmentation (and higher peak
// memory) of keeping everything in glibc's heap.
#include <c10/core/Allocator.h>

#include <cstddef>
#include <map>
#include <unordered_map>
#include <vector>

#include "concurrency/mutex.h"

namespace dtrain::libtorch {

class ReusingCpuAllocator final : public c10::Allocator {
 public:
  // Blocks of at least min_block_bytes are cached, up to max_cached_bytes
  // idle in total; smaller ones go to malloc, which already reuses them.
  ReusingCpuAllocator(std::size_t min_block_bytes, std::size_t max_cached_bytes);
  // Frees the idle blocks. The installed allocator lives as long as the process; one made
  // for a test must outlive the blocks it handed out.
  ~ReusingCpuAllocator() override;
  c10::DataPtr allocate(std::size_t bytes) override;
  void copy_data(void* destination, const void* source, std::size_t bytes) const override {
    default_copy_data(destination, source, bytes);
  }
  // LibTorch's raw allocations (oneDNN's scratch buffers) need a deleter
  // that takes the data pointer alone.
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  std::size_t cached_bytes() const;

  // The allocator installed by retain_freed_memory(): the deleter's way back.
  static ReusingCpuAllocator* instance;

 private:
  static void release(void* data);
  void put(void* data) const;

  std::size_t min_block_bytes_;
  std::size_t max_cached_bytes_;
  mutable concurrency::Mutex mutex_;
  // Cached-size blocks in use -> rounded size.
  mutable std::unordered_map<void*, std::size_t> live_ DTRAIN_GUARDED_BY(mutex_);
  mutable std::map<std::size_t, std::vector<void*>> idle_ DTRAIN_GUARDED_BY(mutex_);  // rounded size -> idle blocks
  mutable std::size_t idle_bytes_ DTRAIN_GUARDED_BY(mutex_) = 0;
};

}  // namespace dtrain::libtorch
