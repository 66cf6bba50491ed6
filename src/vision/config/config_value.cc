#include "vision/config/config_value.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace dtrain::vision::config {

ValueType type_of(const ConfigValue& value) { return static_cast<ValueType>(value.index()); }

std::string_view describe(ValueType type) {
  switch (type) {
    case ValueType::kBool: return "a boolean (true or false)";
    case ValueType::kInt: return "an integer";
    case ValueType::kFloat: return "a float";
    case ValueType::kString: return "a string";
    case ValueType::kIntList: return "a list of integers";
    case ValueType::kFloatList: return "a list of floats";
    case ValueType::kStringList: return "a list of strings";
    case ValueType::kFloatListList: return "a list of lists of floats";
  }
  return "a value";
}

std::optional<ConfigValue> convert(const ConfigValue& value, ValueType type) {
  if (type_of(value) == type) return value;
  if (type == ValueType::kFloat) {
    if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  }
  if (type == ValueType::kFloatList) {
    if (const auto* ints = std::get_if<IntList>(&value)) return FloatList(ints->begin(), ints->end());
  }
  return std::nullopt;
}

std::string format_float(double value) {
  // As Python's repr: fixed notation for decimal exponents -4..15, else
  // scientific; either way the fewest digits that read back exactly.
  char buffer[64];  // 17 significant digits, sign, point, exponent or up to 4 leading zeros
  const auto scientific = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string_view sci(buffer, scientific.ptr);
  int exponent = 0;  // to_chars writes no terminating NUL, so no atoi here
  if (const size_t e = sci.find('e'); e != std::string_view::npos) {
    const char* digits = sci.data() + e + 1;
    if (*digits == '+') ++digits;
    std::from_chars(digits, sci.data() + sci.size(), exponent);
  }
  if (!std::isfinite(value) || exponent < -4 || exponent > 15) return std::string(sci);
  const auto fixed = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed);
  std::string text(buffer, fixed.ptr);
  if (text.find('.') == std::string::npos) text += ".0";
  return text;
}

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

template <typename T, typename Format>
std::string format_list(const std::vector<T>& items, Format format) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + format(items[i]);
  return out + "]";
}

}  // namespace

std::string format_value(const ConfigValue& value) {
  const auto int_text = [](int64_t i) { return std::to_string(i); };
  const auto float_text = [](double d) { return format_float(d); };
  switch (type_of(value)) {
    case ValueType::kBool: return std::get<bool>(value) ? "true" : "false";
    case ValueType::kInt: return int_text(std::get<int64_t>(value));
    case ValueType::kFloat: return float_text(std::get<double>(value));
    case ValueType::kString: return quoted(std::get<std::string>(value));
    case ValueType::kIntList: return format_list(std::get<IntList>(value), int_text);
    case ValueType::kFloatList: return format_list(std::get<FloatList>(value), float_text);
    case ValueType::kStringList: return format_list(std::get<StringList>(value), quoted);
    case ValueType::kFloatListList:
      return format_list(std::get<FloatListList>(value),
                         [&](const FloatList& row) { return format_list(row, float_text); });
  }
  return "";
}

}  // namespace dtrain::vision::config
