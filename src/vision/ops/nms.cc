#include "vision/ops/nms.h"

#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "vectorize/vectorized_loop.h"

#if DTRAIN_TORCH_CUDA
#include "vision/ops/cuda/current_stream.h"
#include "vision/ops/cuda/detection_kernels.h"
#endif

namespace dtrain::vision::ops {
namespace {

// The largest T not above `threshold`: `iou > threshold` (T against double, as torchvision
// compares) is then `iou > it` in T, a comparison a vector register can make.
template <typename T>
T largest_not_above(double threshold) {
  T t = static_cast<T>(threshold);
  if (static_cast<double>(t) > threshold) t = std::nextafter(t, -std::numeric_limits<T>::infinity());
  return t;
}

// Marks every box in [begin, end) whose IoU with box `k` is above `threshold` (a box already
// marked stays marked: marking it again changes nothing, and testing first would keep the loop
// from vectorizing). Two zero-area boxes give 0 / 0 = NaN, which compares false.
template <typename T>
DTRAIN_VECTORIZED_LOOP void mark_overlaps(const T* __restrict x1, const T* __restrict y1, const T* __restrict x2,
                                          const T* __restrict y2, const T* __restrict area, T* __restrict suppressed,
                                          int64_t k, int64_t begin, int64_t end, T threshold) {
  const T kx1 = x1[k], ky1 = y1[k], kx2 = x2[k], ky2 = y2[k], karea = area[k];
  for (int64_t s = begin; s < end; ++s) {
    const T w = std::max(static_cast<T>(0), std::min(kx2, x2[s]) - std::max(kx1, x1[s]));
    const T h = std::max(static_cast<T>(0), std::min(ky2, y2[s]) - std::max(ky1, y1[s]));
    const T inter = w * h;
    const T iou = inter / (karea + area[s] - inter);
    suppressed[s] = iou > threshold ? static_cast<T>(1) : suppressed[s];
  }
}

template <typename T>
at::Tensor greedy_suppression(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const int64_t n = boxes.size(0);
  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor b = boxes.contiguous();
  const T* box = b.data_ptr<T>();
  const int64_t* ord = order.data_ptr<int64_t>();

  // The boxes in score order, one array per coordinate.
  std::vector<T> x1(n), y1(n), x2(n), y2(n), area(n);
  for (int64_t r = 0; r < n; ++r) {
    const T* bi = box + 4 * ord[r];
    x1[r] = bi[0];
    y1[r] = bi[1];
    x2[r] = bi[2];
    y2[r] = bi[3];
    area[r] = (bi[2] - bi[0]) * (bi[3] - bi[1]);
  }
  const T threshold = largest_not_above<T>(iou_threshold);
  std::vector<T> suppressed(n, 0);
  std::vector<int64_t> kept;
  // Each box not suppressed by a higher-scoring kept box is kept, and suppresses the boxes
  // after it that overlap it more than the threshold.
  for (int64_t r = 0; r < n; ++r) {
    if (suppressed[r] != 0) continue;
    kept.push_back(ord[r]);
    mark_overlaps<T>(x1.data(), y1.data(), x2.data(), y2.data(), area.data(), suppressed.data(), r, r + 1, n,
                     threshold);
  }
  at::Tensor result = at::empty({static_cast<int64_t>(kept.size())}, at::kLong);
  std::copy(kept.begin(), kept.end(), result.data_ptr<int64_t>());
  return result;
}

#if DTRAIN_TORCH_CUDA
// On the GPU: the same order (a stable descending sort), the suppression mask and the greedy
// walk as kernels; only the number of kept boxes comes back to the host (masked_select).
at::Tensor greedy_suppression_cuda(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const int64_t n = boxes.size(0);
  const at::Tensor order = std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor sorted = boxes.index_select(0, order).contiguous();
  at::Tensor mask = at::empty({n * cuda::nms_mask_words(n)}, boxes.options().dtype(at::kLong));
  at::Tensor keep = at::empty({n}, boxes.options().dtype(at::kByte));
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "dtrain_nms_cuda", [&] {
    // The kernel compares in scalar_t with the threshold it is given: this one, exact in
    // scalar_t, makes that the CPU's comparison.
    cuda::nms_keep<scalar_t>(sorted.data_ptr<scalar_t>(), n, largest_not_above<scalar_t>(iou_threshold),
                             reinterpret_cast<unsigned long long*>(mask.data_ptr<int64_t>()), keep.data_ptr<uint8_t>(),
                             cuda::current_stream());
  });
  return order.masked_select(keep.to(at::kBool));
}
#endif

}  // namespace

at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "nms: boxes must be [N, 4], got ", boxes.sizes());
  TORCH_CHECK(scores.dim() == 1 && scores.size(0) == boxes.size(0), "nms: scores must be [", boxes.size(0), "], got ",
              scores.sizes());
  TORCH_CHECK(boxes.device() == scores.device(), "nms: boxes are on ", boxes.device(), " but scores on ",
              scores.device());
#if DTRAIN_TORCH_CUDA
  TORCH_CHECK(boxes.device().is_cpu() || boxes.device().is_cuda(), "nms: CPU or CUDA tensors only, got ",
              boxes.device());
#else
  TORCH_CHECK(boxes.device().is_cpu(),
              "nms: only CPU tensors are supported in this build (CUDA needs a LibTorch "
              "with CUDA), got ",
              boxes.device());
#endif
  TORCH_CHECK(boxes.scalar_type() == scores.scalar_type(), "nms: boxes are ", boxes.scalar_type(), " but scores are ",
              scores.scalar_type());
  if (boxes.numel() == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
#if DTRAIN_TORCH_CUDA
  if (boxes.is_cuda()) return greedy_suppression_cuda(boxes, scores.contiguous(), iou_threshold);
#endif
  at::Tensor kept;
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "dtrain_nms",
                             [&] { kept = greedy_suppression<scalar_t>(boxes, scores, iou_threshold); });
  return kept;
}

at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs,
                       double iou_threshold) {
  TORCH_CHECK(idxs.dim() == 1 && idxs.size(0) == boxes.size(0), "batched_nms: idxs must be [", boxes.size(0), "], got ",
              idxs.sizes());
  if (boxes.numel() == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  if (boxes.numel() > (boxes.is_cuda() ? kPerCategoryNmsAboveOnCuda : kPerCategoryNmsAbove)) {
    // One NMS per category on the unshifted boxes, then all kept boxes
    // ordered by score (the same sort call torchvision makes, so ties land alike).
    at::Tensor keep_mask = at::zeros({boxes.size(0)}, boxes.options().dtype(at::kBool));
    const at::Tensor categories = std::get<0>(at::_unique(idxs, /*sorted=*/true));
    for (int64_t c = 0; c < categories.size(0); ++c) {
      const at::Tensor members = at::where(idxs == categories[c])[0];
      const at::Tensor kept = nms(boxes.index_select(0, members), scores.index_select(0, members), iou_threshold);
      keep_mask.index_fill_(0, members.index_select(0, kept), true);
    }
    const at::Tensor kept = at::where(keep_mask)[0];
    const at::Tensor order = std::get<1>(scores.index_select(0, kept).sort(/*dim=*/0, /*descending=*/true));
    return kept.index_select(0, order);
  }
  const at::Tensor max_coordinate = boxes.max();
  const at::Tensor offsets = idxs.to(boxes.scalar_type()) * (max_coordinate + 1);
  return nms(boxes + offsets.unsqueeze(1), scores, iou_threshold);
}

}  // namespace dtrain::vision::ops
