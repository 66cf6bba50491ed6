#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "vision/config/config_error.h"
#include "vision/config/config_value.h"

namespace dtrain::vision::config {

// A tree of typed keys with defaults, addressed by dotted names
// ("MODEL.RPN.NMS_THRESH"), as Detectron2's CfgNode. The set of keys and
// their types is fixed by define(); files and overrides can only change
// values, so a misspelt key or a value of the wrong type is an error at load
// time rather than a silently ignored setting.
//
// Merges are all or nothing: when merge_from_file or merge_from_list throws,
// the config is as it was before the call.
class Config {
 public:
  // Adds a key with its default; the default's type is the key's type.
  // Throws ConfigError when the key exists, is malformed, or would make a
  // value and a group of the same name ("MODEL" next to "MODEL.WEIGHTS").
  void define(std::string key, ConfigValue default_value);

  bool has(std::string_view key) const;
  // Whether `prefix` names a group of keys ("MODEL.RPN").
  bool is_group(std::string_view prefix) const;
  // Every key, in the order defined; keys(prefix): those under a group.
  std::vector<std::string> keys() const;
  std::vector<std::string> keys(std::string_view group) const;

  ValueType type(std::string_view key) const;
  const ConfigValue& value(std::string_view key) const;

  // T is one of ConfigValue's alternatives (bool, int64_t, double,
  // std::string, IntList, FloatList, StringList, FloatListList); asking for
  // another type than the key's throws ConfigError, no conversion happens.
  template <typename T>
  T get(std::string_view key) const {
    const ConfigValue& stored = value(key);
    if (const T* typed = std::get_if<T>(&stored)) return *typed;
    throw_wrong_get(key, value_type_of<T>());
  }

  // Converts as convert() does (an integer is accepted for a float key).
  void set(std::string_view key, const ConfigValue& value);

  // Applies a YAML file: nested mappings of keys to values, after the file
  // named by its top-level `_BASE_` (relative to this file), recursively.
  void merge_from_file(const std::string& yaml_path);
  // Applies KEY VALUE pairs, as Detectron2's trailing command-line
  // arguments: {"SOLVER.MAX_ITER", "20000", "INPUT.MIN_SIZE_TRAIN", "(640, 672)"}.
  // Values are YAML flow values; Python tuple parentheses mean a list.
  void merge_from_list(const std::vector<std::string>& key_value_pairs);

  // Every key as nested YAML, in definition order; merge_from_file reads it
  // back to an equal config.
  std::string dump() const;

  bool operator==(const Config& other) const;

 private:
  [[noreturn]] void throw_wrong_get(std::string_view key, ValueType asked) const;
  size_t index_of(std::string_view key) const;

  struct Entry {
    std::string key;
    ConfigValue value;
  };
  std::vector<Entry> entries_;                        // definition order
  std::map<std::string, size_t, std::less<>> index_;  // key -> position in entries_
};

}  // namespace dtrain::vision::config
