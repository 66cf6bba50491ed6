#include "vision/config/yaml_file_merge.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "vision/config/key_suggestion.h"
#include "vision/config/yaml_value.h"

namespace dtrain::vision::config {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBaseKey = "_BASE_";

// "configs/x.yaml:12" (yaml-cpp counts lines from 0).
std::string where(const std::string& file, const YAML::Node& node) {
  const int line = node.Mark().line;
  return line >= 0 ? fmt::format("{}:{}", file, line + 1) : file;
}

YAML::Node load_yaml(const std::string& file) {
  if (fs::is_directory(file)) throw ConfigError(fmt::format("cannot read config file {}: it is a directory", file));
  std::ifstream in(file);
  if (!in) throw ConfigError(fmt::format("cannot read config file {}: {}", file, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return YAML::Load(text.str());
  } catch (const YAML::ParserException& error) {
    throw ConfigError(fmt::format("invalid YAML in {}:{}: {}", file, error.mark.line + 1, error.msg));
  }
}

// Applies one mapping whose keys sit under `prefix` ("" or "MODEL.").
// `seen` catches a key given twice in one file, which YAML parsers
// disagree about and which is almost always a mistake.
void apply_mapping(Config& config, const YAML::Node& mapping, const std::string& prefix, const std::string& file,
                   std::set<std::string>& seen) {
  for (const auto& item : mapping) {
    const YAML::Node& name = item.first;
    const YAML::Node& value = item.second;
    if (!name.IsScalar()) {
      throw ConfigError(fmt::format("config keys are names, got {} in {}", describe_yaml(name), where(file, name)));
    }
    if (prefix.empty() && name.Scalar() == kBaseKey) continue;  // merged before this mapping
    const std::string key = prefix + name.Scalar();
    if (!seen.insert(key).second) {
      throw ConfigError(fmt::format("config key '{}' is given twice in {}", key, where(file, name)));
    }
    if (config.has(key)) {
      const std::optional<ConfigValue> parsed = value_from_yaml(value, config.type(key));
      if (!parsed) {
        throw ConfigError(fmt::format("{} expects {}, got {} in {}", key, describe(config.type(key)),
                                      describe_yaml(value), where(file, name)));
      }
      config.set(key, *parsed);
    } else if (value.IsMap() && value.size() > 0) {
      // A group; or a misspelt one, whose first key is then reported in
      // full, so that the suggestion can match MODEL.RPNN.NMS_THRESH to
      // MODEL.RPN.NMS_THRESH.
      apply_mapping(config, value, key + ".", file, seen);
    } else if (config.is_group(key)) {
      if (value.IsNull() || value.IsMap()) continue;  // "SOLVER:" with nothing under it
      throw ConfigError(fmt::format("{} is a group of keys, not a value; got {} in {}", key, describe_yaml(value),
                                    where(file, name)));
    } else {
      throw ConfigError(unknown_key_message(key, config.keys(), where(file, name)));
    }
  }
}

struct OpenFile {
  fs::path canonical;
  std::string shown;  // as the user or the _BASE_ line spelt it
};

void merge_file(Config& config, const std::string& file, std::vector<OpenFile>& open_files) {
  fs::path canonical;
  try {
    canonical = fs::weakly_canonical(file);
  } catch (const fs::filesystem_error& error) {
    throw ConfigError(fmt::format("cannot read config file {}: {}", file, error.code().message()));
  }
  const auto open =
      std::find_if(open_files.begin(), open_files.end(), [&](const OpenFile& f) { return f.canonical == canonical; });
  if (open != open_files.end()) {
    std::string chain;
    for (auto it = open; it != open_files.end(); ++it) chain += it->shown + " -> ";
    throw ConfigError(fmt::format("_BASE_ cycle: {}{}", chain, file));
  }
  open_files.push_back({canonical, file});

  const YAML::Node root = load_yaml(file);
  if (root.IsNull()) {  // an empty file changes nothing
    open_files.pop_back();
    return;
  }
  if (!root.IsMap()) {
    throw ConfigError(fmt::format("config file {} must hold a mapping of keys, got {}", file, describe_yaml(root)));
  }
  for (const auto& item : root) {
    if (!item.first.IsScalar() || item.first.Scalar() != kBaseKey) continue;
    const YAML::Node& base = item.second;
    if (!base.IsScalar() || base.Scalar().empty()) {
      throw ConfigError(fmt::format("_BASE_ expects the path of a YAML file, got {} in {}", describe_yaml(base),
                                    where(file, item.first)));
    }
    const fs::path base_path = fs::path(file).parent_path() / base.Scalar();  // absolute stays absolute
    merge_file(config, base_path.lexically_normal().string(), open_files);
  }
  std::set<std::string> seen;
  apply_mapping(config, root, "", file, seen);
  open_files.pop_back();
}

}  // namespace

void merge_yaml_file(Config& config, const std::string& path) {
  std::vector<OpenFile> open_files;
  merge_file(config, path, open_files);
}

}  // namespace dtrain::vision::config
