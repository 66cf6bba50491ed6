#pragma once

// Mixed precision as torch.autocast gives it: inside an AutocastRegion, LibTorch runs the
// operators that gain from 16 bits (convolutions, matrix products) in float16 or bfloat16
// and keeps the ones that need range (reductions, exp, losses) in float32, casting inputs
// as it goes. Parameters stay float32; their 16-bit copies live until the outermost region
// ends. Mask R-CNN opens one region around its networks (MaskRcnnImpl) and brings what
// leaves a network back to float32 (full_precision) before box geometry and losses.
#include <ATen/ATen.h>

#include "vision/modeling/mask_rcnn_options.h"

namespace dtrain::vision::modeling {

class AutocastRegion {
 public:
  // kOff does nothing. Float16 on the CPU is refused (std::invalid_argument): LibTorch
  // 1.13's CPU autocast knows bfloat16 only, and float16 arithmetic on CPUs is slow anyway.
  AutocastRegion(MixedPrecision precision, at::Device device);
  ~AutocastRegion();
  AutocastRegion(const AutocastRegion&) = delete;
  AutocastRegion& operator=(const AutocastRegion&) = delete;

 private:
  bool active_ = false;
  at::DeviceType device_type_ = at::kCPU;
  bool was_enabled_ = false;
  at::ScalarType previous_type_ = at::kFloat;
};

// Whether this CPU has bfloat16 arithmetic (AVX512-BF16 or AMX-BF16). Without it LibTorch
// 1.13 emulates bfloat16, and on a CPU without AVX-512 its matrix products run in scalar
// code: the shapes job's step was 13x slower than in float32 on an AVX2-only EPYC
// (docs/performance.md). Not an x86 CPU: true (nothing known to warn about there).
bool cpu_computes_bfloat16();

// float16 and bfloat16 tensors as float32; anything else as it is.
at::Tensor full_precision(const at::Tensor& tensor);

// The type box coordinates are kept in next to features of type `features`: at least
// float32 (anchors in bfloat16 would be off by pixels on an 800-pixel image).
inline at::ScalarType geometry_type(at::ScalarType features) { return at::promote_types(features, at::kFloat); }

}  // namespace dtrain::vision::modeling
