#include "job/hyperparameters.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace dtrain::job {
namespace {

using Json = nlohmann::ordered_json;

// Decodes one UTF-8 code point at `i`; invalid bytes decode as themselves
// (latin-1), the way Python would have received them after decoding.
char32_t next_code_point(std::string_view s, size_t& i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  int extra = c >= 0xF0 && c < 0xF8 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (c < 0x80 || extra == 0 || i + static_cast<size_t>(extra) >= s.size()) {
    ++i;
    return c;
  }
  char32_t cp = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    unsigned char cont = byte(i + k);
    if ((cont & 0xC0) != 0x80) {
      ++i;
      return c;
    }
    cp = (cp << 6) | (cont & 0x3F);
  }
  i += static_cast<size_t>(extra) + 1;
  return cp;
}

void append_u_escape(std::string& out, unsigned value) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", value & 0xFFFFu);
  out += buf;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    char32_t cp = next_code_point(s, i);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp >= 0x20 && cp <= 0x7E) {
      out += static_cast<char>(cp);
    } else if (cp >= 0x10000) {
      char32_t v = cp - 0x10000;
      append_u_escape(out, 0xD800 + static_cast<unsigned>(v >> 10));
      append_u_escape(out, 0xDC00 + static_cast<unsigned>(v & 0x3FF));
    } else {
      append_u_escape(out, static_cast<unsigned>(cp));
    }
  }
  out += '"';
  return out;
}

std::string python_repr_string(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == '\\') {
      out += "\\\\";
    } else if (ch == quote) {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

std::string python_repr(const Json& value);

std::string python_repr_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return python_float_repr(v);
}

std::string python_repr(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return value.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(value.get<long long>());
    case Json::value_t::number_unsigned: return std::to_string(value.get<unsigned long long>());
    case Json::value_t::number_float: return python_repr_float(value.get<double>());
    case Json::value_t::string: return python_repr_string(value.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) {
        if (i) out += ", ";
        out += python_repr(value[i]);
      }
      return out + "]";
    }
    case Json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : value.items()) {
        if (!first) out += ", ";
        first = false;
        out += python_repr_string(k) + ": " + python_repr(v);
      }
      return out + "}";
    }
    default: return "";
  }
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, result.ptr);  // "-d.ddde+XX"
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  int exponent = std::atoi(sci.c_str() + e_pos + 1);
  std::string digits;
  for (size_t i = 0; i < e_pos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else {
      auto int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_text;
}

std::string encode_hyperparameter(const nlohmann::ordered_json& value) { return python_json_dumps(value); }

Hyperparameters decode_hyperparameters(const nlohmann::ordered_json& file_contents) {
  Hyperparameters decoded = Hyperparameters::object();
  if (!file_contents.is_object()) return decoded;
  for (const auto& [key, value] : file_contents.items()) {
    if (value.is_string()) {
      Json parsed = Json::parse(value.get_ref<const std::string&>(), nullptr, false);
      decoded[key] = parsed.is_discarded() ? value : parsed;
    } else {
      decoded[key] = value;
    }
  }
  return decoded;
}

bool is_framework_parameter(const std::string& key) { return key.starts_with("sagemaker_"); }

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return value.get<bool>() ? "true" : "false";
    case Json::value_t::number_integer: return std::to_string(value.get<long long>());
    case Json::value_t::number_unsigned: return std::to_string(value.get<unsigned long long>());
    case Json::value_t::number_float: return python_float_repr(value.get<double>());
    case Json::value_t::string: return json_string(value.get_ref<const std::string&>());
    case Json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) {
        if (i) out += ",";
        out += python_json_dumps(value[i]);
      }
      return out + "]";
    }
    case Json::value_t::object: {
      std::vector<std::string> keys;
      for (const auto& item : value.items()) keys.push_back(item.key());
      std::sort(keys.begin(), keys.end());
      std::string out = "{";
      for (size_t i = 0; i < keys.size(); ++i) {
        if (i) out += ",";
        out += json_string(keys[i]) + ":" + python_json_dumps(value.at(keys[i]));
      }
      return out + "}";
    }
    default: return "null";
  }
}

std::string python_str(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  return python_repr(value);
}

std::vector<std::string> to_cmd_args(const Hyperparameters& hyperparameters) {
  std::vector<std::string> keys;
  for (const auto& item : hyperparameters.items()) keys.push_back(item.key());
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> args;
  for (const auto& key : keys) {
    args.push_back(key.empty() ? "" : key.size() > 1 ? "--" + key : "-" + key);
    const Json& value = hyperparameters.at(key);
    if (value.is_object()) {
      std::vector<std::string> inner_keys;
      for (const auto& item : value.items()) inner_keys.push_back(item.key());
      std::sort(inner_keys.begin(), inner_keys.end());
      std::string joined;
      for (size_t i = 0; i < inner_keys.size(); ++i) {
        joined += (i ? "," : "") + inner_keys[i] + "=" + python_str(value.at(inner_keys[i]));
      }
      args.push_back(joined);
    } else if (value.is_null()) {
      args.emplace_back();
    } else {
      args.push_back(python_str(value));
    }
  }
  return args;
}

std::string to_env_value(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return python_json_dumps(value);
}

std::string env_name(const std::string& key) {
  std::string name = "SM_" + key;
  for (char& c : name) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return name;
}

}  // namespace dtrain::job
