#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "vision/ops/cuda/detection_kernels.h"

namespace dtrain::vision::ops::cuda {
namespace {

constexpr int kBoxesPerBlock = 64;  // one mask word per row per block of columns
constexpr int kWalkThreads = 256;

// The CPU operator's IoU: areas without the +1, and 0 / 0 = NaN, which suppresses nothing.
template <typename T>
__device__ bool suppresses(const T* a, const T* b, T threshold) {
  const T w = max(static_cast<T>(0), min(a[2], b[2]) - max(a[0], b[0]));
  const T h = max(static_cast<T>(0), min(a[3], b[3]) - max(a[1], b[1]));
  const T inter = w * h;
  const T area_a = (a[2] - a[0]) * (a[3] - a[1]);
  const T area_b = (b[2] - b[0]) * (b[3] - b[1]);
  return inter / (area_a + area_b - inter) > threshold;
}

// Block (row_block, column_block): for each of its up to 64 rows i, the bits of the columns
// j > i in the column block whose box box i suppresses. Blocks left of the diagonal write
// nothing: the walk never reads those words.
template <typename T>
__global__ void mask_kernel(const T* boxes, int64_t n, int64_t words, T threshold, unsigned long long* mask) {
  const int64_t row_block = blockIdx.y, column_block = blockIdx.x;
  if (column_block < row_block) return;
  __shared__ T columns[kBoxesPerBlock * 4];
  const int64_t first_column = column_block * kBoxesPerBlock;
  const int64_t column_count = min(static_cast<int64_t>(kBoxesPerBlock), n - first_column);
  if (threadIdx.x < column_count) {
    for (int q = 0; q < 4; ++q) columns[threadIdx.x * 4 + q] = boxes[(first_column + threadIdx.x) * 4 + q];
  }
  __syncthreads();
  const int64_t i = row_block * kBoxesPerBlock + threadIdx.x;
  if (i >= n) return;
  const T* box = boxes + i * 4;
  unsigned long long bits = 0;
  for (int64_t c = 0; c < column_count; ++c) {
    const int64_t j = first_column + c;
    if (j > i && suppresses(box, columns + c * 4, threshold)) bits |= 1ULL << c;
  }
  mask[i * words + column_block] = bits;
}

// The greedy walk, in one block: box i is kept unless an earlier kept box suppressed it; a
// kept box's row is OR-ed into the suppressed set by all threads together.
__global__ void walk_kernel(const unsigned long long* mask, int64_t n, int64_t words, uint8_t* keep) {
  extern __shared__ unsigned long long suppressed[];
  for (int64_t w = threadIdx.x; w < words; w += blockDim.x) suppressed[w] = 0;
  __syncthreads();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t word = i / kBoxesPerBlock;
    const bool kept = !((suppressed[word] >> (i % kBoxesPerBlock)) & 1ULL);
    if (threadIdx.x == 0) keep[i] = kept ? 1 : 0;
    if (kept) {
      const unsigned long long* row = mask + i * words;
      for (int64_t w = word + threadIdx.x; w < words; w += blockDim.x) suppressed[w] |= row[w];
    }
    __syncthreads();
  }
}

void check_launch(const char* kernel) {
  if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess) {
    throw std::runtime_error(std::string(kernel) + " launch failed: " + cudaGetErrorString(error));
  }
}

}  // namespace

template <typename T>
void nms_keep(const T* boxes, int64_t n, double iou_threshold, unsigned long long* mask, uint8_t* keep,
              cudaStream_t stream) {
  if (n == 0) return;
  const int64_t words = nms_mask_words(n);
  const std::size_t shared = static_cast<std::size_t>(words) * sizeof(unsigned long long);
  int device = 0, shared_limit = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (shared > static_cast<std::size_t>(shared_limit)) {
    throw std::runtime_error("nms: " + std::to_string(n) + " boxes need " + std::to_string(shared) +
                             " bytes of shared memory for the suppression walk; this GPU has " +
                             std::to_string(shared_limit));
  }
  const dim3 grid(static_cast<unsigned>(words), static_cast<unsigned>(words));
  mask_kernel<T><<<grid, kBoxesPerBlock, 0, stream>>>(boxes, n, words, static_cast<T>(iou_threshold), mask);
  check_launch("nms mask");
  if (shared > 48 * 1024) {
    cudaFuncSetAttribute(walk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
  }
  walk_kernel<<<1, kWalkThreads, shared, stream>>>(mask, n, words, keep);
  check_launch("nms walk");
}

template void nms_keep<float>(const float*, int64_t, double, unsigned long long*, uint8_t*, cudaStream_t);
template void nms_keep<double>(const double*, int64_t, double, unsigned long long*, uint8_t*, cudaStream_t);

}  // namespace dtrain::vision::ops::cuda
