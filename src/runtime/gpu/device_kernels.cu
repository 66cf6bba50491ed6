#include "runtime/gpu/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "runtime/gpu/cuda_check.h"

namespace dtrain::runtime::gpu {
namespace {

// Pieces per launch: the batch travels as a kernel parameter (24 bytes a piece, within the
// 4 KiB every architecture accepts), so a launch needs no copy of descriptors beforehand.
constexpr int kPiecesPerLaunch = 128;
constexpr int kThreads = 256;

struct CopyBatch {
  int count;
  CopyPiece pieces[kPiecesPerLaunch];
};

// blockIdx.y picks the piece; the blocks along x stride over its bytes. 16-byte words when
// both ends are 16-byte aligned, 4-byte words when 4-byte aligned, else single bytes.
__global__ void batched_copy_kernel(const __grid_constant__ CopyBatch batch) {
  const CopyPiece piece = batch.pieces[blockIdx.y];
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const auto src = reinterpret_cast<std::uintptr_t>(piece.source);
  const auto dst = reinterpret_cast<std::uintptr_t>(piece.destination);
  std::size_t done = 0;
  if (((src | dst) & 15) == 0) {
    const std::size_t words = piece.bytes / 16;
    auto* out = static_cast<uint4*>(piece.destination);
    const auto* in = static_cast<const uint4*>(piece.source);
    for (std::size_t i = first; i < words; i += stride) out[i] = in ? in[i] : make_uint4(0, 0, 0, 0);
    done = words * 16;
  } else if (((src | dst) & 3) == 0) {
    const std::size_t words = piece.bytes / 4;
    auto* out = static_cast<std::uint32_t*>(piece.destination);
    const auto* in = static_cast<const std::uint32_t*>(piece.source);
    for (std::size_t i = first; i < words; i += stride) out[i] = in ? in[i] : 0u;
    done = words * 4;
  }
  auto* out = static_cast<unsigned char*>(piece.destination);
  const auto* in = static_cast<const unsigned char*>(piece.source);
  for (std::size_t i = done + first; i < piece.bytes; i += stride) out[i] = in ? in[i] : 0;
}

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>(std::clamp<std::size_t>((items + kThreads - 1) / kThreads, 1, 1024));
}

template <typename T, typename Compute>
__global__ void scale_kernel(T* data, std::size_t count, Compute factor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = static_cast<T>(static_cast<Compute>(data[i]) * factor);
  }
}

template <typename T>
__global__ void divide_kernel(T* data, std::size_t count, T divisor) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = data[i] / divisor;
  }
}

template <typename T, typename Compute>
void launch_scale(void* data, std::size_t count, double factor, cudaStream_t stream) {
  scale_kernel<T, Compute>
      <<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, static_cast<Compute>(factor));
}

template <typename T>
void launch_divide(void* data, std::size_t count, std::int64_t divisor, cudaStream_t stream) {
  divide_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count, static_cast<T>(divisor));
}

}  // namespace

void batched_copy(const std::vector<CopyPiece>& pieces, cudaStream_t stream) {
  CopyBatch batch{};
  std::size_t largest = 0;
  auto flush = [&] {
    if (batch.count == 0) return;
    const dim3 grid(blocks_for(largest / 16 + 1), static_cast<unsigned>(batch.count));
    batched_copy_kernel<<<grid, kThreads, 0, stream>>>(batch);
    cuda_check(cudaGetLastError(), "batched_copy_kernel launch");
    batch.count = 0;
    largest = 0;
  };
  for (const CopyPiece& piece : pieces) {
    if (piece.bytes == 0) continue;
    batch.pieces[batch.count++] = piece;
    largest = std::max(largest, piece.bytes);
    if (batch.count == kPiecesPerLaunch) flush();
  }
  flush();
}

void scale(DataType dtype, void* data, std::size_t count, double factor, cudaStream_t stream) {
  if (factor == 1.0 || count == 0) return;
  switch (dtype) {
    case DataType::kFloat16: launch_scale<__half, float>(data, count, factor, stream); break;
    case DataType::kBFloat16: launch_scale<__nv_bfloat16, float>(data, count, factor, stream); break;
    case DataType::kFloat32: launch_scale<float, float>(data, count, factor, stream); break;
    case DataType::kFloat64: launch_scale<double, double>(data, count, factor, stream); break;
    default: return;  // integers are not scaled (the API refuses factors for them)
  }
  cuda_check(cudaGetLastError(), "scale_kernel launch");
}

void divide_integers(DataType dtype, void* data, std::size_t count, std::int64_t divisor, cudaStream_t stream) {
  if (divisor == 1 || count == 0) return;
  switch (dtype) {
    case DataType::kUInt8: launch_divide<std::uint8_t>(data, count, divisor, stream); break;
    case DataType::kInt32: launch_divide<std::int32_t>(data, count, divisor, stream); break;
    case DataType::kInt64: launch_divide<std::int64_t>(data, count, divisor, stream); break;
    default: return;
  }
  cuda_check(cudaGetLastError(), "divide_kernel launch");
}

}  // namespace dtrain::runtime::gpu
