#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

namespace dtrain::vision::config {

using IntList = std::vector<int64_t>;
using FloatList = std::vector<double>;
using StringList = std::vector<std::string>;
using FloatListList = std::vector<std::vector<double>>;

// The value of one config key. A key's type is fixed by its default; merging
// converts what a file or override says into that type or fails.
using ConfigValue = std::variant<bool, int64_t, double, std::string, IntList, FloatList, StringList, FloatListList>;

// In the order of ConfigValue's alternatives, so that the variant's index is
// the type.
enum class ValueType { kBool, kInt, kFloat, kString, kIntList, kFloatList, kStringList, kFloatListList };

ValueType type_of(const ConfigValue& value);

// "an integer", "a list of floats": the words of "X expects an integer".
std::string_view describe(ValueType type);

// The ValueType of a C++ type; only ConfigValue's alternatives compile.
template <typename T>
constexpr ValueType value_type_of() {
  static_assert(std::is_same_v<T, bool> || std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::string> || std::is_same_v<T, IntList> || std::is_same_v<T, FloatList> ||
                    std::is_same_v<T, StringList> || std::is_same_v<T, FloatListList>,
                "a config value is bool, int64_t, double, std::string or one of the list types");
  return static_cast<ValueType>(ConfigValue(std::in_place_type<T>).index());
}

// `value` as a value of `type`: itself when the types agree, and an integer
// (or integer list) where a float (or float list) is expected, because
// "BASE_LR: 1" means 1.0. Never the other way: a float is not silently
// truncated. nullopt when the types do not fit.
std::optional<ConfigValue> convert(const ConfigValue& value, ValueType type);

// The shortest text that reads back as the same double, always with a '.'
// or an exponent so that YAML readers see a float: 0.7 -> "0.7", 32 -> "32.0".
std::string format_float(double value);

// The value as YAML flow text, as dump() writes it: 0.7, "FrozenBN", [800],
// [[32.0], [64.0]]. For messages and docs.
std::string format_value(const ConfigValue& value);

}  // namespace dtrain::vision::config
