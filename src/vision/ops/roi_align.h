// RoIAlign (He et al., Mask R-CNN) with torchvision's exact sampling rules:
// each output bin averages a grid of bilinearly interpolated samples.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace dtrain::vision::ops {

// input [N, C, H, W] (float or double; CPU, or CUDA in a build against a LibTorch with CUDA,
// where a roi with a batch index outside [0, N) pools zeros instead of raising); rois [K, 5] rows of
// (batch_index, x1, y1, x2, y2) in input coordinates before spatial_scale.
// Returns [K, C, pooled_height, pooled_width].
//  - aligned: shift the roi by -0.5 pixel so that pixel centres sit at
//    integer + 0.5 (the correct alignment); without it a roi's width and
//    height are forced to at least 1 (the legacy behaviour).
//  - sampling_ratio > 0: that many samples per bin along each axis; <= 0:
//    ceil(roi_size / pooled_size) samples, adapted to each roi.
at::Tensor roi_align_forward(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                             int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio, bool aligned);

// Gradient of roi_align_forward with respect to its input: [batch, channels, height, width].
at::Tensor roi_align_backward(const at::Tensor& grad_output, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch, int64_t channels,
                              int64_t height, int64_t width, int64_t sampling_ratio, bool aligned);

// roi_align_forward recorded by autograd: gradients flow to input (never to rois). float16 and
// bfloat16 input is pooled in float32 (rois of any floating type) and returned in its type.
at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale, int64_t pooled_height,
                     int64_t pooled_width, int64_t sampling_ratio, bool aligned);

}  // namespace dtrain::vision::ops
