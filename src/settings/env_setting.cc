#include "settings/env_setting.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace dtrain::settings {
namespace {

std::string quoted(const char* name, const std::string& value) { return std::string(name) + "='" + value + "'"; }

}  // namespace

std::optional<std::string> env_text(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

std::optional<int64_t> env_integer(const char* name, int64_t min, int64_t max, const char* what) {
  const auto text = env_text(name);
  if (!text) return std::nullopt;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  const auto [stop, error] = std::from_chars(text->data(), end, value);
  if (error != std::errc() || stop != end || value < min || value > max) {
    throw SettingError(quoted(name, *text) + " is not " + what + ": expected a whole number from " +
                       std::to_string(min) + " to " + std::to_string(max));
  }
  return value;
}

std::optional<double> env_seconds(const char* name) {
  const auto text = env_text(name);
  if (!text) return std::nullopt;
  double value = 0;
  const char* end = text->data() + text->size();
  // from_chars reads plain decimals only (no leading '+', no hex), and all of them must be used.
  const auto [stop, error] = std::from_chars(text->data(), end, value, std::chars_format::general);
  if (error != std::errc() || stop != end || !std::isfinite(value) || !(value > 0)) {
    throw SettingError(quoted(name, *text) +
                       " is not a number of seconds: expected a decimal above 0, e.g. 300 or 2.5");
  }
  return value;
}

std::optional<int> env_port(const char* name) {
  const auto port = env_integer(name, 1, 65535, "a port");
  if (!port) return std::nullopt;
  return static_cast<int>(*port);
}

}  // namespace dtrain::settings
