#pragma once

#include <string>
#include <vector>

#include "vision/config/config.h"

namespace dtrain::vision::config {

// Applies KEY VALUE pairs from a command line, in order (a later pair wins).
// A value is read as a YAML flow value, with Python tuple parentheses taken
// for brackets, so "(640, 672)", "[[32], [64]]" and "((32,), (64,))" all
// work; a string key takes the text as it is unless it is quoted.
// Leaves `config` partly changed when it throws: Config::merge_from_list
// merges into a copy.
void merge_overrides(Config& config, const std::vector<std::string>& key_value_pairs);

// The value text with every unquoted '(' and ')' turned into '[' and ']'
// when it starts with '(' (a Python tuple); otherwise the text unchanged.
std::string tuples_as_lists(const std::string& text);

}  // namespace dtrain::vision::config
