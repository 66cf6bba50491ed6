#include "vision/config/override_list.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "vision/config/key_suggestion.h"
#include "vision/config/yaml_value.h"

namespace dtrain::vision::config {

namespace {

constexpr std::string_view kWhere = "the overrides";

bool is_quoted(const std::string& text) {
  return text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front();
}

ConfigValue parse_value(const Config& config, const std::string& key, const std::string& text) {
  const ValueType type = config.type(key);
  // Paths and names go through as typed: OUTPUT_DIR ./out, MODEL.WEIGHTS "".
  if (type == ValueType::kString && !is_quoted(text)) return text;

  const auto mismatch = [&](std::string_view why) {
    return ConfigError(fmt::format("{} expects {}, got '{}'{} in {}", key, describe(type), text, why, kWhere));
  };
  YAML::Node node;
  try {
    node = YAML::Load(tuples_as_lists(text));
  } catch (const YAML::ParserException& error) {
    throw mismatch(fmt::format(" (not a YAML value: {})", error.msg));
  }
  std::optional<ConfigValue> value = value_from_yaml(node, type);
  if (!value) throw mismatch("");
  return std::move(*value);
}

// Names the key that lost its value: the first one followed by another key
// rather than a value, else the last token.
std::string odd_count_message(const Config& config, const std::vector<std::string>& tokens) {
  std::string message =
      fmt::format("overrides come in KEY VALUE pairs, got an odd number of items ({})", tokens.size());
  for (size_t i = 1; i < tokens.size(); i += 2) {
    if (config.has(tokens[i])) {
      return message + fmt::format(": {} has no value (it is followed by the key {})", tokens[i - 1], tokens[i]);
    }
  }
  return message + fmt::format(": the last one, '{}', has no value", tokens.back());
}

}  // namespace

std::string tuples_as_lists(const std::string& text) {
  const size_t start = text.find_first_not_of(" \t");
  if (start == std::string::npos || text[start] != '(') return text;
  std::string out = text;
  char quote = 0;
  for (char& c : out) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      c = '[';
    } else if (c == ')') {
      c = ']';
    }
  }
  return out;
}

void merge_overrides(Config& config, const std::vector<std::string>& key_value_pairs) {
  if (key_value_pairs.size() % 2 != 0) throw ConfigError(odd_count_message(config, key_value_pairs));
  for (size_t i = 0; i < key_value_pairs.size(); i += 2) {
    const std::string& key = key_value_pairs[i];
    if (!config.has(key)) {
      if (config.is_group(key)) {
        throw ConfigError(
            fmt::format("{} is a group of keys, not a value, in {}; override its keys one by one", key, kWhere));
      }
      throw ConfigError(unknown_key_message(key, config.keys(), kWhere));
    }
    config.set(key, parse_value(config, key, key_value_pairs[i + 1]));
  }
}

}  // namespace dtrain::vision::config
