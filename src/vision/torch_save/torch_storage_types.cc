#include "vision/torch_save/torch_storage_types.h"

#include <array>
#include <utility>

namespace dtrain::vision::torch_save {
namespace {

struct StorageClass {
  const char* name;  // within module torch
  at::ScalarType dtype;
};

// The dtypes state dicts hold. Complex and quantized storages exist too, but
// no detection checkpoint has them; they fail loudly rather than guessed at.
constexpr std::array<StorageClass, 10> kStorageClasses{{
    {"FloatStorage", at::kFloat},
    {"DoubleStorage", at::kDouble},
    {"HalfStorage", at::kHalf},
    {"BFloat16Storage", at::kBFloat16},
    {"LongStorage", at::kLong},
    {"IntStorage", at::kInt},
    {"ShortStorage", at::kShort},
    {"CharStorage", at::kChar},
    {"ByteStorage", at::kByte},
    {"BoolStorage", at::kBool},
}};

constexpr std::string_view kModule = "torch.";

}  // namespace

std::optional<at::ScalarType> dtype_of_storage_class(std::string_view qualified_name) {
  if (!qualified_name.starts_with(kModule)) return std::nullopt;
  const std::string_view name = qualified_name.substr(kModule.size());
  for (const StorageClass& c : kStorageClasses) {
    if (name == c.name) return c.dtype;
  }
  return std::nullopt;
}

std::optional<std::string> storage_class_of_dtype(at::ScalarType dtype) {
  for (const StorageClass& c : kStorageClasses) {
    if (c.dtype == dtype) return std::string(c.name);
  }
  return std::nullopt;
}

}  // namespace dtrain::vision::torch_save
