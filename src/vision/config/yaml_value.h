#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

#include "vision/config/config_value.h"

namespace dtrain::vision::config {

// Reads a YAML node as a value of the key's type, or nullopt when it is not
// one. The key's type decides, not YAML's guess: a plain scalar is an
// integer, float or boolean only when it reads as one in full; a quoted
// scalar is only ever a string ("50" is not 50). Booleans are true/false in
// any of YAML's three casings (true, True, TRUE). An integer counts as a
// float, and a lone scalar as a list of one for the lists of scalars.
std::optional<ConfigValue> value_from_yaml(const YAML::Node& node, ValueType type);

// The node as a message shows it after "got": 'fifty', the string "50",
// [1, [2]], nothing.
std::string describe_yaml(const YAML::Node& node);

}  // namespace dtrain::vision::config
