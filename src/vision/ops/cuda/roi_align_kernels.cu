#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "vision/ops/cuda/detection_kernels.h"
#include "vision/ops/roi_align_sampling.h"

namespace dtrain::vision::ops::cuda {
namespace {

constexpr int kThreads = 256;

// The output element `index` of [K, C, PH, PW] as (roi, channel, bin row, bin column).
struct OutputElement {
  int64_t k, c, ph, pw;
};

__device__ OutputElement output_element(int64_t index, const RoiAlignShape& s) {
  OutputElement e;
  e.pw = index % s.pooled_width;
  e.ph = (index / s.pooled_width) % s.pooled_height;
  e.c = (index / (s.pooled_width * s.pooled_height)) % s.channels;
  e.k = index / (s.pooled_width * s.pooled_height * s.channels);
  return e;
}

template <typename T>
__device__ RoiGeometry<T> geometry_of(const T* rois, int64_t k, const RoiAlignShape& s) {
  return RoiGeometry<T>(rois + 5 * k, s.spatial_scale, s.pooled_height, s.pooled_width, s.sampling_ratio, s.aligned);
}

// One thread per output element (k, c, ph, pw). A roi whose batch index is outside the batch
// pools zeros: checking on the host would cost a synchronisation per call (the CPU operator
// raises an error instead; on the GPU the rois come from the model's own proposals).
template <typename T>
__global__ void forward_kernel(const T* input, const T* rois, T* output, RoiAlignShape s) {
  const int64_t total = s.num_rois * s.channels * s.pooled_height * s.pooled_width;
  for (int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const OutputElement e = output_element(index, s);
    const RoiGeometry<T> g = geometry_of(rois, e.k, s);
    if (g.batch_index < 0 || g.batch_index >= s.batch) {
      output[index] = 0;
      continue;
    }
    const T* plane = input + (g.batch_index * s.channels + e.c) * s.height * s.width;
    T sum = 0;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const T y = g.sample_y(e.ph, iy);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        // The four products summed first, then accumulated, as on the CPU.
        const BilinearSample<T> p = bilinear_sample<T>(s.height, s.width, y, g.sample_x(e.pw, ix));
        sum += p.weights[0] * plane[p.offsets[0]] + p.weights[1] * plane[p.offsets[1]] +
               p.weights[2] * plane[p.offsets[2]] + p.weights[3] * plane[p.offsets[3]];
      }
    }
    output[index] = sum / g.count;
  }
}

// One thread per element of grad_output, scattering into the input's gradient with atomics
// (rois overlap, so several threads may add to one pixel).
template <typename T>
__global__ void backward_kernel(const T* grad_output, const T* rois, T* grad_input, RoiAlignShape s) {
  const int64_t total = s.num_rois * s.channels * s.pooled_height * s.pooled_width;
  for (int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const OutputElement e = output_element(index, s);
    const RoiGeometry<T> g = geometry_of(rois, e.k, s);
    if (g.batch_index < 0 || g.batch_index >= s.batch) continue;
    T* plane = grad_input + (g.batch_index * s.channels + e.c) * s.height * s.width;
    const T grad = grad_output[index];
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const T y = g.sample_y(e.ph, iy);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const BilinearSample<T> p = bilinear_sample<T>(s.height, s.width, y, g.sample_x(e.pw, ix));
        for (int q = 0; q < 4; ++q) {
          // A sample outside the map has weight 0: adding nothing, it needs no atomic.
          if (p.weights[q] != 0) atomicAdd(plane + p.offsets[q], grad * p.weights[q] / g.count);
        }
      }
    }
  }
}

unsigned blocks_for(int64_t total) {
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

void check_launch(const char* kernel) {
  if (const cudaError_t error = cudaGetLastError(); error != cudaSuccess) {
    throw std::runtime_error(std::string(kernel) + " launch failed: " + cudaGetErrorString(error));
  }
}

}  // namespace

template <typename T>
void roi_align_forward(const T* input, const T* rois, T* output, const RoiAlignShape& shape, cudaStream_t stream) {
  const int64_t total = shape.num_rois * shape.channels * shape.pooled_height * shape.pooled_width;
  if (total == 0) return;
  forward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(input, rois, output, shape);
  check_launch("roi_align forward");
}

template <typename T>
void roi_align_backward(const T* grad_output, const T* rois, T* grad_input, const RoiAlignShape& shape,
                        cudaStream_t stream) {
  const int64_t total = shape.num_rois * shape.channels * shape.pooled_height * shape.pooled_width;
  if (total == 0) return;
  backward_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(grad_output, rois, grad_input, shape);
  check_launch("roi_align backward");
}

template void roi_align_forward<float>(const float*, const float*, float*, const RoiAlignShape&, cudaStream_t);
template void roi_align_forward<double>(const double*, const double*, double*, const RoiAlignShape&, cudaStream_t);
template void roi_align_backward<float>(const float*, const float*, float*, const RoiAlignShape&, cudaStream_t);
template void roi_align_backward<double>(const double*, const double*, double*, const RoiAlignShape&, cudaStream_t);

}  // namespace dtrain::vision::ops::cuda
