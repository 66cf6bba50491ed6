#include "vision/config/yaml_value.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace dtrain::vision::config {

namespace {

// yaml-cpp tags a plain (unquoted) scalar "?" and a quoted one "!".
bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

// from_chars takes no leading '+', YAML and Python do.
std::string_view without_plus(std::string_view text) {
  return text.size() > 1 && text.front() == '+' && text[1] != '-' ? text.substr(1) : text;
}

std::optional<int64_t> read_int(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string_view text = without_plus(node.Scalar());
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> read_float(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string_view text = without_plus(node.Scalar());
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<bool> read_bool(const YAML::Node& node) {
  if (!is_plain_scalar(node)) return std::nullopt;
  const std::string& text = node.Scalar();
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

std::optional<std::string> read_string(const YAML::Node& node) {
  if (!node.IsScalar()) return std::nullopt;
  return node.Scalar();
}

// A sequence whose every item `read` accepts; a lone scalar is a list of one
// when `lone_scalar_ok`.
template <typename Read>
auto read_list(const YAML::Node& node, Read read, bool lone_scalar_ok)
    -> std::optional<std::vector<typename decltype(read(node))::value_type>> {
  using Item = typename decltype(read(node))::value_type;
  std::vector<Item> items;
  if (lone_scalar_ok && node.IsScalar()) {
    auto item = read(node);
    if (!item) return std::nullopt;
    items.push_back(std::move(*item));
    return items;
  }
  if (!node.IsSequence()) return std::nullopt;
  for (const YAML::Node& child : node) {
    auto item = read(child);
    if (!item) return std::nullopt;
    items.push_back(std::move(*item));
  }
  return items;
}

std::optional<FloatList> read_float_list(const YAML::Node& node) {
  return read_list(node, read_float, /*lone_scalar_ok=*/false);
}

}  // namespace

std::optional<ConfigValue> value_from_yaml(const YAML::Node& node, ValueType type) {
  const auto wrap = [](auto read) -> std::optional<ConfigValue> {
    if (read) return ConfigValue(std::move(*read));
    return std::nullopt;
  };
  switch (type) {
    case ValueType::kBool: return wrap(read_bool(node));
    case ValueType::kInt: return wrap(read_int(node));
    case ValueType::kFloat: return wrap(read_float(node));
    case ValueType::kString: return wrap(read_string(node));
    case ValueType::kIntList: return wrap(read_list(node, read_int, true));
    case ValueType::kFloatList: return wrap(read_list(node, read_float, true));
    case ValueType::kStringList: return wrap(read_list(node, read_string, true));
    // [32, 64] could mean [[32, 64]] or [[32], [64]]: only the full form is read.
    case ValueType::kFloatListList: return wrap(read_list(node, read_float_list, false));
  }
  return std::nullopt;
}

std::string describe_yaml(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsScalar()) {
    if (is_plain_scalar(node)) return fmt::format("'{}'", node.Scalar());
    return fmt::format("the string \"{}\"", node.Scalar());
  }
  YAML::Emitter emitter;
  emitter << YAML::Flow << node;
  return emitter.c_str();
}

}  // namespace dtrain::vision::config
