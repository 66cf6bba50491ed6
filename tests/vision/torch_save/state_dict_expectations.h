// Comparing a loaded StateDict with the description make_state_dict.py
// writes (expected.json): names in order, dtype, shape, layout,
// requires_grad and every value exactly.
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "vision/torch_save/torch_checkpoint.h"

namespace dtrain::vision::torch_save::testing {

enum class Layout {
  kAsSaved,     // strides and storage offset as Python had them
  kContiguous,  // what save_state_dict writes: row-major, offset 0
};

// Python's str(dtype).
inline std::string python_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kHalf: return "torch.float16";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    default: return at::toString(t);
  }
}

inline const at::Tensor& find(const StateDict& state, const std::string& name) {
  for (const NamedTensor& e : state) {
    if (e.name == name) return e.tensor;
  }
  throw std::runtime_error("no tensor '" + name + "'");
}

inline std::vector<std::int64_t> row_major(const std::vector<std::int64_t>& sizes) {
  std::vector<std::int64_t> strides(sizes.size());
  std::int64_t step = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<std::int64_t>(sizes[d], 1);
  }
  return strides;
}

inline void expect_state_dict(const StateDict& state, const nlohmann::json& expected, Layout layout) {
  ASSERT_EQ(state.size(), expected.size());
  for (std::size_t i = 0; i < state.size(); ++i) {
    const nlohmann::json& e = expected[i];
    const std::string name = e["name"];
    SCOPED_TRACE(name);
    const at::Tensor& t = state[i].tensor;
    EXPECT_EQ(state[i].name, name);
    EXPECT_EQ(python_dtype(t.scalar_type()), e["dtype"].get<std::string>());
    const auto shape = e["shape"].get<std::vector<std::int64_t>>();
    EXPECT_EQ(t.sizes().vec(), shape);
    if (layout == Layout::kAsSaved) {
      EXPECT_EQ(t.strides().vec(), e["stride"].get<std::vector<std::int64_t>>());
      EXPECT_EQ(t.storage_offset(), e["offset"].get<std::int64_t>());
    } else {
      EXPECT_EQ(t.strides().vec(), row_major(shape));
      EXPECT_EQ(t.storage_offset(), 0);
    }
    EXPECT_EQ(t.requires_grad(), e["requires_grad"].get<bool>());
    EXPECT_TRUE(t.device().is_cpu());
    const at::Tensor flat = t.detach().reshape({-1});
    const nlohmann::json& values = e["values"];
    ASSERT_EQ(static_cast<std::size_t>(flat.numel()), values.size());
    if (at::isFloatingType(t.scalar_type())) {
      const at::Tensor d = flat.to(at::kDouble).contiguous();
      for (std::int64_t k = 0; k < d.numel(); ++k) {
        ASSERT_EQ(d.data_ptr<double>()[k], values[k].get<double>()) << "element " << k;
      }
    } else {
      const at::Tensor l = flat.to(at::kLong).contiguous();
      for (std::int64_t k = 0; k < l.numel(); ++k) {
        ASSERT_EQ(l.data_ptr<std::int64_t>()[k], values[k].get<std::int64_t>()) << "element " << k;
      }
    }
  }
}

}  // namespace dtrain::vision::torch_save::testing
