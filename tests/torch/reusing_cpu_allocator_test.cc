// The CPU allocator retain_freed_memory() installs: freed large blocks come
// back for the next allocation of their size, the idle total stays under its
// cap, and tensors (including oneDNN's raw allocations) work on top of it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "torch/reusing_cpu_allocator.h"
#include "dtrain/torch.h"

namespace dtrain::libtorch {
namespace {

TEST(ReusingCpuAllocator, AFreedLargeBlockIsHandedOutAgainForTheSameSize) {
  ReusingCpuAllocator allocator(1 << 20, 64 << 20);
  ReusingCpuAllocator* previous = ReusingCpuAllocator::instance;
  ReusingCpuAllocator::instance = &allocator;
  void* first = nullptr;
  {
    c10::DataPtr block = allocator.allocate(8 << 20);
    first = block.get();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_EQ(allocator.cached_bytes(), size_t{8} << 20);
  {
    c10::DataPtr again = allocator.allocate((8 << 20) - 100);  // rounds to the same size class
    EXPECT_EQ(again.get(), first);
    EXPECT_EQ(allocator.cached_bytes(), 0u);
  }
  // A small block is malloc's business: nothing cached.
  { c10::DataPtr small = allocator.allocate(1000); }
  EXPECT_EQ(allocator.cached_bytes(), size_t{8} << 20);
  ReusingCpuAllocator::instance = previous;
}

TEST(ReusingCpuAllocator, IdleBlocksNeverExceedTheCap) {
  ReusingCpuAllocator allocator(1 << 20, 20 << 20);
  ReusingCpuAllocator* previous = ReusingCpuAllocator::instance;
  ReusingCpuAllocator::instance = &allocator;
  {
    std::vector<c10::DataPtr> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(allocator.allocate(8 << 20));
  }
  EXPECT_EQ(allocator.cached_bytes(), size_t{16} << 20);  // two fit under 20 MiB, three were freed
  ReusingCpuAllocator::instance = previous;
}

TEST(ReusingCpuAllocator, TensorsAndConvolutionsComputeTheSameOnTopOfIt) {
  const at::Tensor input = at::rand({2, 8, 64, 64});
  const at::Tensor weight = at::rand({16, 8, 3, 3});
  const at::Tensor before = at::conv2d(input, weight, {}, 1, 1);
  retain_freed_memory();
  for (int i = 0; i < 3; ++i) {
    const at::Tensor big = at::ones({1 << 20});  // 4 MiB: served and recycled by the cache
    EXPECT_EQ(big.sum().item<float>(), float(1 << 20));
    EXPECT_TRUE(at::conv2d(input, weight, {}, 1, 1).equal(before));
  }
}

}  // namespace
}  // namespace dtrain::libtorch
