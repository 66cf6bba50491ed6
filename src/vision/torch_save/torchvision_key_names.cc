#include "vision/torch_save/torchvision_key_names.h"

#include <cstdint>
#include <string_view>

namespace dtrain::vision::torch_save {
namespace {

// "weight" or "bias", the only tensors of the renamed convolutions.
bool is_conv_tensor(std::string_view name) { return name == "weight" || name == "bias"; }

// A block index as torchvision writes it: decimal digits, no sign, no leading
// zero (ModuleList indices are str(int)).
bool is_index(std::string_view s) {
  if (s.empty() || s.size() > 9 || (s.size() > 1 && s[0] == '0')) return false;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// `key` is "<prefix><index>.<tensor>": the index and the tensor name, or
// false.
bool split_indexed(std::string_view key, std::string_view prefix, std::string_view& index, std::string_view& tensor) {
  if (!key.starts_with(prefix)) return false;
  const std::string_view rest = key.substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot == std::string_view::npos) return false;
  index = rest.substr(0, dot);
  tensor = rest.substr(dot + 1);
  return is_index(index) && is_conv_tensor(tensor);
}

}  // namespace

std::string modern_torchvision_key(const std::string& key) {
  std::string_view index, tensor;
  for (const std::string_view block : {"backbone.fpn.inner_blocks.", "backbone.fpn.layer_blocks."}) {
    if (split_indexed(key, block, index, tensor)) {
      return std::string(block) + std::string(index) + ".0." + std::string(tensor);
    }
  }
  constexpr std::string_view kRpnConv = "rpn.head.conv.";
  if (key.starts_with(kRpnConv) && is_conv_tensor(std::string_view(key).substr(kRpnConv.size()))) {
    return std::string(kRpnConv) + "0.0." + key.substr(kRpnConv.size());
  }
  constexpr std::string_view kMaskHead = "roi_heads.mask_head.";
  constexpr std::string_view kMaskFcn = "roi_heads.mask_head.mask_fcn";  // mask_fcn1 is block 0
  if (split_indexed(key, kMaskFcn, index, tensor) && index != "0") {
    const std::int64_t k = std::stoll(std::string(index));
    return std::string(kMaskHead) + std::to_string(k - 1) + ".0." + std::string(tensor);
  }
  return key;
}

bool is_ignorable_extra_key(const std::string& key) { return std::string_view(key).ends_with(".num_batches_tracked"); }

}  // namespace dtrain::vision::torch_save
