#include "vision/config/config.h"

#include <fmt/format.h>

#include <algorithm>

#include "vision/config/key_suggestion.h"
#include "vision/config/override_list.h"
#include "vision/config/yaml_file_merge.h"

namespace dtrain::vision::config {

namespace {

bool valid_key(std::string_view key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  if (key.find("..") != std::string_view::npos) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

}  // namespace

void Config::define(std::string key, ConfigValue default_value) {
  if (!valid_key(key)) throw ConfigError(fmt::format("malformed config key '{}'", key));
  if (has(key)) throw ConfigError(fmt::format("config key '{}' is defined twice", key));
  if (is_group(key)) {
    throw ConfigError(fmt::format("config key '{}' is already a group of keys", key));
  }
  // No prefix of the new key may be a value: "MODEL.WEIGHTS.X" under "MODEL.WEIGHTS".
  for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1)) {
    if (has(std::string_view(key).substr(0, dot))) {
      throw ConfigError(fmt::format("config key '{}' lies under the value '{}'", key, key.substr(0, dot)));
    }
  }
  index_.emplace(key, entries_.size());
  entries_.push_back({std::move(key), std::move(default_value)});
}

bool Config::has(std::string_view key) const { return index_.find(key) != index_.end(); }

bool Config::is_group(std::string_view prefix) const {
  const std::string group = std::string(prefix) + ".";
  const auto it = index_.lower_bound(group);
  return it != index_.end() && it->first.starts_with(group);
}

std::vector<std::string> Config::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const Entry& entry : entries_) out.push_back(entry.key);
  return out;
}

std::vector<std::string> Config::keys(std::string_view group) const {
  const std::string prefix = std::string(group) + ".";
  std::vector<std::string> out;
  for (const Entry& entry : entries_) {
    if (entry.key.starts_with(prefix)) out.push_back(entry.key);
  }
  return out;
}

size_t Config::index_of(std::string_view key) const {
  const auto it = index_.find(key);
  if (it == index_.end()) throw ConfigError(unknown_key_message(key, keys(), ""));
  return it->second;
}

ValueType Config::type(std::string_view key) const { return type_of(value(key)); }

const ConfigValue& Config::value(std::string_view key) const { return entries_[index_of(key)].value; }

void Config::throw_wrong_get(std::string_view key, ValueType asked) const {
  throw ConfigError(fmt::format("config key {} holds {}, not {}", key, describe(type(key)), describe(asked)));
}

void Config::set(std::string_view key, const ConfigValue& value) {
  Entry& entry = entries_[index_of(key)];
  std::optional<ConfigValue> converted = convert(value, type_of(entry.value));
  if (!converted) {
    throw ConfigError(fmt::format("{} expects {}, got {}", key, describe(type_of(entry.value)), format_value(value)));
  }
  entry.value = std::move(*converted);
}

void Config::merge_from_file(const std::string& yaml_path) {
  Config merged = *this;
  merge_yaml_file(merged, yaml_path);
  *this = std::move(merged);
}

void Config::merge_from_list(const std::vector<std::string>& key_value_pairs) {
  Config merged = *this;
  merge_overrides(merged, key_value_pairs);
  *this = std::move(merged);
}

namespace {

// Writes the keys under `prefix` ("" or "MODEL.") as a YAML mapping, groups
// in the order their first key was defined.
void dump_group(const Config& config, const std::vector<std::string>& keys, const std::string& prefix, int indent,
                std::string& out) {
  std::vector<std::string> names;
  for (const std::string& key : keys) {
    if (!key.starts_with(prefix)) continue;
    const std::string rest = key.substr(prefix.size());
    std::string name = rest.substr(0, rest.find('.'));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  }
  for (const std::string& name : names) {
    const std::string full = prefix + name;
    if (config.has(full)) {
      out += fmt::format("{:{}}{}: {}\n", "", indent, name, format_value(config.value(full)));
    } else {
      out += fmt::format("{:{}}{}:\n", "", indent, name);
      dump_group(config, keys, full + ".", indent + 2, out);
    }
  }
}

}  // namespace

std::string Config::dump() const {
  std::string out;
  dump_group(*this, keys(), "", 0, out);
  return out;
}

bool Config::operator==(const Config& other) const {
  if (entries_.size() != other.entries_.size()) return false;
  return std::all_of(entries_.begin(), entries_.end(),
                     [&](const Entry& entry) { return other.has(entry.key) && other.value(entry.key) == entry.value; });
}

}  // namespace dtrain::vision::config
