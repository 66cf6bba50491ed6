// Non-maximum suppression with torchvision's rules.
#pragma once

#include <ATen/ATen.h>

namespace dtrain::vision::ops {

// CPU tensors, and CUDA tensors in a build against a LibTorch with CUDA.
// Indices (int64) of the boxes [N, 4] (x1, y1, x2, y2) that survive greedy
// suppression, in decreasing score order. A box is suppressed by a kept,
// higher-ranked box when their IoU is strictly greater than iou_threshold.
// Equal scores keep their input order (stable descending sort).
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold);

// NMS within each category idxs [N] (integers): boxes of different categories
// never suppress each other. Like torchvision: up to kPerCategoryNmsAbove
// coordinates (kPerCategoryNmsAboveOnCuda for CUDA tensors), every category's
// boxes are shifted by idx * (max coordinate + 1) so that categories cannot
// overlap, and one NMS runs; above it, one NMS per category and the kept boxes
// sorted by score. On CUDA torchvision moved its bound from 20,000 to 100,000 (0.22; the GPU
// benchmark's 0.26 has it): the RPN's ~9,000 proposals per image at COCO's size then take one
// NMS, not one per pyramid level (an H100's profile at 4 images: 20 NMS and their host syncs
// per step against torchvision's 4, docs/performance.md). Both paths keep the same boxes.
inline constexpr int64_t kPerCategoryNmsAbove = 4000;
inline constexpr int64_t kPerCategoryNmsAboveOnCuda = 100000;
at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs, double iou_threshold);

}  // namespace dtrain::vision::ops
