#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "vision/ops/cuda/detection_kernels.h"

namespace dtrain::vision::ops::cuda {
namespace {

constexpr int kThreads = 256;

// One bilinear sample of a plane (the CPU operator's rules): up to one pixel outside the map
// still interpolates, clamped to the border; beyond that it reads nothing.
template <typename T>
struct Sample {
  int64_t offsets[4];
  T weights[4];
  bool inside;
};

template <typename T>
__device__ Sample<T> bilinear(int64_t height, int64_t width, T y, T x) {
  Sample<T> s{};
  s.inside = !(y < -1.0 || y > height || x < -1.0 || x > width);
  if (!s.inside) return s;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y);
  int64_t x_low = static_cast<int64_t>(x);
  int64_t y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const T ly = y - y_low, lx = x - x_low;
  const T hy = 1 - ly, hx = 1 - lx;
  s.offsets[0] = y_low * width + x_low;
  s.offsets[1] = y_low * width + x_high;
  s.offsets[2] = y_high * width + x_low;
  s.offsets[3] = y_high * width + x_high;
  s.weights[0] = hy * hx;
  s.weights[1] = hy * lx;
  s.weights[2] = ly * hx;
  s.weights[3] = ly * lx;
  return s;
}

// Where roi k samples, as the CPU operator's RoiGeometry computes it.
template <typename T>
struct Geometry {
  int64_t batch_index;
  T start_x, start_y, bin_w, bin_h;
  int64_t grid_h, grid_w;
  T count;
};

template <typename T>
__device__ Geometry<T> geometry(const T* roi, const RoiAlignShape& s) {
  Geometry<T> g;
  g.batch_index = static_cast<int64_t>(roi[0]);
  const T offset = s.aligned ? static_cast<T>(0.5) : static_cast<T>(0);
  const T scale = static_cast<T>(s.spatial_scale);
  g.start_x = roi[1] * scale - offset;
  g.start_y = roi[2] * scale - offset;
  T roi_w = roi[3] * scale - offset - g.start_x;
  T roi_h = roi[4] * scale - offset - g.start_y;
  if (!s.aligned) {
    roi_w = roi_w > 1 ? roi_w : static_cast<T>(1);
    roi_h = roi_h > 1 ? roi_h : static_cast<T>(1);
  }
  g.bin_h = roi_h / static_cast<T>(s.pooled_height);
  g.bin_w = roi_w / static_cast<T>(s.pooled_width);
  g.grid_h = s.sampling_ratio > 0 ? s.sampling_ratio : static_cast<int64_t>(ceil(roi_h / static_cast<T>(s.pooled_height)));
  g.grid_w = s.sampling_ratio > 0 ? s.sampling_ratio : static_cast<int64_t>(ceil(roi_w / static_cast<T>(s.pooled_width)));
  const int64_t samples = g.grid_h * g.grid_w;
  g.count = static_cast<T>(samples > 1 ? samples : 1);
  return g;
}

template <typename T>
__device__ T sample_y(const Geometry<T>& g, int64_t ph, int64_t iy) {
  return g.start_y + ph * g.bin_h + (iy + static_cast<T>(0.5)) * g.bin_h / static_cast<T>(g.grid_h);
}

template <typename T>
__device__ T sample_x(const Geometry<T>& g, int64_t pw, int64_t ix) {
  return g.start_x + pw * g.bin_w + (ix + static_cast<T>(0.5)) * g.bin_w / static_cast<T>(g.grid_w);
}

// One thread per output element (k, c, ph, pw). A roi whose batch index is outside the batch
// pools zeros: checking on the host would cost a synchronisation per call (the CPU operator
// raises an error instead; on the GPU the rois come from the model's own proposals).
template <typename T>
__global__ void forward_kernel(const T* input, const T* rois, T* output, RoiAlignShape s) {
  const int64_t total = s.num_rois * s.channels * s.pooled_height * s.pooled_width;
  for (int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; index < total;
       index += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pw = index % s.pooled_width;
    const int64_t ph = (index / s.pooled_width) % s.pooled_height;
    const int64_t c = (index / (s.pooled_width * s.pooled_height)) % s.channels;
    const int64_t k = index / (s.pooled_width * s.pooled_height * s.channels);
    const Geometry<T> g = geometry(rois + 5 * k, s);
    if (g.batch_index < 0 || g.batch_index >= s.batch) {
      output[index] = 0;
      continue;
    }
    const T* plane = input + (g.batch_index * s.channels + c) * s.height * s.width;
    T sum = 0;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const T y = sample_y(g, ph, iy);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const Sample<T> p = bilinear(s.height, s.width, y, sample_x(g, pw, ix));
        if (!p.inside) continue;
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
    const int64_t pw = index % s.pooled_width;
    const int64_t ph = (index / s.pooled_width) % s.pooled_height;
    const int64_t c = (index / (s.pooled_width * s.pooled_height)) % s.channels;
    const int64_t k = index / (s.pooled_width * s.pooled_height * s.channels);
    const Geometry<T> g = geometry(rois + 5 * k, s);
    if (g.batch_index < 0 || g.batch_index >= s.batch) continue;
    T* plane = grad_input + (g.batch_index * s.channels + c) * s.height * s.width;
    const T grad = grad_output[index];
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const T y = sample_y(g, ph, iy);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const Sample<T> p = bilinear(s.height, s.width, y, sample_x(g, pw, ix));
        if (!p.inside) continue;
        for (int q = 0; q < 4; ++q) atomicAdd(plane + p.offsets[q], grad * p.weights[q] / g.count);
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
