// The typed storage classes torch.save names in its persistent ids
// ("torch.FloatStorage" and kin) and the dtypes they stand for.
#pragma once

#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <string_view>

namespace dtrain::vision::torch_save {

// The dtype of a storage class given as "module.name" ("torch.HalfStorage"),
// or nothing for a class this reader does not support.
std::optional<at::ScalarType> dtype_of_storage_class(std::string_view qualified_name);

// The class name within module torch ("FloatStorage") for a dtype, or nothing
// when torch.save has no storage class for it that this layer writes.
std::optional<std::string> storage_class_of_dtype(at::ScalarType dtype);

}  // namespace dtrain::vision::torch_save
