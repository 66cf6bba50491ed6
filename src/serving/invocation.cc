#include "serving/invocation.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

namespace dtrain::serving {
namespace {

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  const auto end = text.find_last_not_of(" \t");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

std::string media_type(const std::string& header_value) {
  std::string type = trimmed(header_value.substr(0, header_value.find(';')));
  std::transform(type.begin(), type.end(), type.begin(), [](unsigned char c) { return std::tolower(c); });
  return type;
}

void parse_custom_attributes(const std::string& header_value, std::map<std::string, std::string>& into) {
  size_t start = 0;
  while (start <= header_value.size()) {
    const size_t comma = std::min(header_value.find(',', start), header_value.size());
    const std::string item = header_value.substr(start, comma - start);
    if (const size_t equals = item.find('='); equals != std::string::npos) {
      const std::string key = trimmed(item.substr(0, equals));
      if (!key.empty()) into[key] = trimmed(item.substr(equals + 1));
    }
    start = comma + 1;
  }
}

std::string error_body(const std::string& message) {
  // replace: a message quoting a client's bytes must still be valid JSON.
  return nlohmann::json{{"error", message}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double number_parameter(const InvocationRequest& request, const std::string& name, double fallback, double low,
                        double high) {
  const auto it = request.parameters.find(name);
  if (it == request.parameters.end()) return fallback;
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value) || value < low ||
      value > high) {
    throw InvocationError(400, "parameter " + name + " must be a number in [" + nlohmann::json(low).dump() + ", " +
                                   nlohmann::json(high).dump() + "], got '" + text + "'");
  }
  return value;
}

}  // namespace dtrain::serving
