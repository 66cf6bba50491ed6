// CUDA kernels for the detection operators that LibTorch has no GPU version of: RoIAlign
// forward and backward, and the suppression step of NMS. They take raw device pointers and
// a stream, so they build with nvcc alone (every machine, CI included); roi_align.cc and
// nms.cc call them for CUDA tensors in a build against a LibTorch with CUDA. Semantics are the
// CPU operators' (torchvision's rules), documented in ../roi_align.h and ../nms.h.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace dtrain::vision::ops::cuda {

struct RoiAlignShape {
  int64_t num_rois;
  int64_t batch, channels, height, width;  // of the features
  int64_t pooled_height, pooled_width;
  double spatial_scale;
  int64_t sampling_ratio;
  bool aligned;
};

// output[K, C, PH, PW] from input[N, C, H, W] and rois[K, 5]; T is float or double.
template <typename T>
void roi_align_forward(const T* input, const T* rois, T* output, const RoiAlignShape& shape, cudaStream_t stream);

// Adds the gradient of roi_align_forward into grad_input[N, C, H, W] (zeroed by the caller).
template <typename T>
void roi_align_backward(const T* grad_output, const T* rois, T* grad_input, const RoiAlignShape& shape,
                        cudaStream_t stream);

// Words of 64 bits per row of the suppression mask for n boxes.
inline int64_t nms_mask_words(int64_t n) { return (n + 63) / 64; }

// boxes[n, 4] in decreasing score order. Writes keep[i] = 1 if the i-th box survives greedy
// suppression (IoU strictly above iou_threshold with a kept, earlier box suppresses), else 0.
// mask: device scratch of n * nms_mask_words(n) words. Throws if n needs more than the
// shared memory one block has for the suppression walk (about 3 million boxes).
template <typename T>
void nms_keep(const T* boxes, int64_t n, double iou_threshold, unsigned long long* mask, uint8_t* keep,
              cudaStream_t stream);

}  // namespace dtrain::vision::ops::cuda
