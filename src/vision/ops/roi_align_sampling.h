// Where RoIAlign samples the feature map (torchvision's rules), shared by the CPU operator
// and the CUDA kernels (compiled by both the host compiler and nvcc), so that both sample the
// same points with the same weights.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define DTRAIN_HOST_DEVICE __host__ __device__
#else
#define DTRAIN_HOST_DEVICE
#endif

namespace dtrain::vision::ops {

// One bilinear sample: the four pixels it reads and their weights. A sample that falls too
// far outside the feature map reads nothing (all weights 0, all offsets 0).
template <typename T>
struct BilinearSample {
  int64_t offsets[4] = {0, 0, 0, 0};  // y * width + x of the four neighbours
  T weights[4] = {0, 0, 0, 0};
};

template <typename T>
DTRAIN_HOST_DEVICE BilinearSample<T> bilinear_sample(int64_t height, int64_t width, T y, T x) {
  BilinearSample<T> s;
  // Up to one pixel outside the map still interpolates (clamped to the border);
  // beyond that the sample contributes 0.
  if (y < -1.0 || y > height || x < -1.0 || x > width) return s;
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y);
  int64_t x_low = static_cast<int64_t>(x);
  int64_t y_high;
  int64_t x_high;
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
  const T ly = y - y_low;
  const T lx = x - x_low;
  const T hy = 1 - ly;
  const T hx = 1 - lx;
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

// Where one roi samples the feature map: its start, its bins, the samples per bin.
template <typename T>
struct RoiGeometry {
  int64_t batch_index;
  T start_x, start_y;
  T bin_w, bin_h;
  int64_t grid_h, grid_w;
  T count;  // samples averaged per bin, at least 1

  DTRAIN_HOST_DEVICE RoiGeometry(const T* roi, double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                                 int64_t sampling_ratio, bool aligned) {
    batch_index = static_cast<int64_t>(roi[0]);
    const T offset = aligned ? static_cast<T>(0.5) : static_cast<T>(0);
    const T scale = static_cast<T>(spatial_scale);
    start_x = roi[1] * scale - offset;
    start_y = roi[2] * scale - offset;
    const T end_x = roi[3] * scale - offset;
    const T end_y = roi[4] * scale - offset;
    T roi_w = end_x - start_x;
    T roi_h = end_y - start_y;
    if (!aligned) {  // at least 1 (as std::max(roi_w, 1) does, which device code lacks)
      roi_w = roi_w < static_cast<T>(1) ? static_cast<T>(1) : roi_w;
      roi_h = roi_h < static_cast<T>(1) ? static_cast<T>(1) : roi_h;
    }
    bin_h = roi_h / static_cast<T>(pooled_height);
    bin_w = roi_w / static_cast<T>(pooled_width);
    grid_h = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(ceil(roi_h / static_cast<T>(pooled_height)));
    grid_w = sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(ceil(roi_w / static_cast<T>(pooled_width)));
    const int64_t samples = grid_h * grid_w;
    count = static_cast<T>(samples > 1 ? samples : 1);
  }

  // The coordinates of sample (iy, ix) of bin (ph, pw).
  DTRAIN_HOST_DEVICE T sample_y(int64_t ph, int64_t iy) const {
    return start_y + ph * bin_h + (iy + static_cast<T>(0.5)) * bin_h / static_cast<T>(grid_h);
  }
  DTRAIN_HOST_DEVICE T sample_x(int64_t pw, int64_t ix) const {
    return start_x + pw * bin_w + (ix + static_cast<T>(0.5)) * bin_w / static_cast<T>(grid_w);
  }
};

}  // namespace dtrain::vision::ops
