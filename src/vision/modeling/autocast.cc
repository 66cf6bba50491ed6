#include "vision/modeling/autocast.h"

#include <ATen/autocast_mode.h>

#include <optional>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dtrain::vision::modeling {
namespace {

// Autocast's switches, by device type.
bool enabled(at::DeviceType device) { return at::autocast::is_autocast_enabled(device); }
void set_enabled(at::DeviceType device, bool on) { at::autocast::set_autocast_enabled(device, on); }
at::ScalarType dtype(at::DeviceType device) { return at::autocast::get_autocast_dtype(device); }
void set_dtype(at::DeviceType device, at::ScalarType type) { at::autocast::set_autocast_dtype(device, type); }

// The 16-bit type of a setting; kOff gives nullopt.
std::optional<at::ScalarType> autocast_type(MixedPrecision precision) {
  switch (precision) {
    case MixedPrecision::kFloat16: return at::kHalf;
    case MixedPrecision::kBFloat16: return at::kBFloat16;
    case MixedPrecision::kOff: break;
  }
  return std::nullopt;
}

}  // namespace

AutocastRegion::AutocastRegion(MixedPrecision precision, at::Device device) {
  const std::optional<at::ScalarType> type = autocast_type(precision);
  if (!type) return;
  device_type_ = device.type();
  if (device_type_ != at::kCUDA && device_type_ != at::kCPU) {
    throw std::invalid_argument("mixed precision runs on the CPU or CUDA, not on " + device.str());
  }
  if (device_type_ == at::kCPU && *type == at::kHalf) {
    throw std::invalid_argument("mixed precision in float16 needs a GPU (MODEL.DEVICE cuda); on the CPU use bfloat16");
  }
  was_enabled_ = enabled(device_type_);
  previous_type_ = dtype(device_type_);
  set_enabled(device_type_, true);
  set_dtype(device_type_, *type);
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastRegion::~AutocastRegion() {
  if (!active_) return;
  // As torch.autocast's exit: the cached 16-bit weights go with the outermost region.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_enabled(device_type_, was_enabled_);
  set_dtype(device_type_, previous_type_);
}

bool cpu_computes_bfloat16() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // Leaf 7, subleaf 0: EDX bit 22 is AMX-BF16, EAX the last subleaf; subleaf 1: EAX bit 5 is
  // AVX512-BF16.
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if ((edx & (1u << 22)) != 0) return true;
  return eax >= 1 && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)) != 0;
#else
  return true;
#endif
}

at::Tensor full_precision(const at::Tensor& tensor) {
  const at::ScalarType type = tensor.scalar_type();
  return type == at::kHalf || type == at::kBFloat16 ? tensor.to(at::kFloat) : tensor;
}

}  // namespace dtrain::vision::modeling
