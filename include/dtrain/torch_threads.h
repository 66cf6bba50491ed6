// How a process computes with LibTorch on the CPU: threads and memory. Apart from torch.h
// so that inference and serving use them without the collective runtime (dtrain_torch_threads
// links LibTorch only); torch.h includes it.
#pragma once

namespace dtrain::libtorch {

// Threads this rank computes with: LibTorch's intra-op pool and the BLAS library's own pool
// (OpenBLAS keeps one of its own, sized to every core, which torch::set_num_threads does not
// reach: ranks sharing a host would oversubscribe it).
void set_num_threads(int threads);

// Keeps memory that tensors free in the process for the next allocation of the same size,
// instead of returning it to the kernel: installs a CPU allocator that caches freed blocks of
// 1 MiB and more (at most DTRAIN_CPU_CACHE_MB, default 512, idle). glibc serves every
// allocation above its mmap threshold (32 MiB at most) with fresh pages and unmaps them on
// free, so a detection model's activations (tens of MiB each) are page-faulted and zeroed
// anew on every step. Process-wide; call once at startup. Measured in docs/performance.md
// (Mask R-CNN).
void retain_freed_memory();

}  // namespace dtrain::libtorch
