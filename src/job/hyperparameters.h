#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtrain::job {

// Hyperparameters as SageMaker's training toolkit sees them. Values keep the
// order and types of the JSON they came from (ordered_json), because the
// toolkit's Python renders them with str() and json.dumps(), and this layer
// reproduces that rendering byte for byte.
using Hyperparameters = nlohmann::ordered_json;

// How a value is stored in hyperparameters.json: the SageMaker SDK writes
// json.dumps(value) for every value, so every entry is a string ("64",
// "0.1", "\"adam\"", "true").
std::string encode_hyperparameter(const nlohmann::ordered_json& value);

// The toolkit's read_hyperparameters(): a string value that parses as JSON
// becomes that JSON value, any other string stays a string, non-strings
// stay as they are.
Hyperparameters decode_hyperparameters(const nlohmann::ordered_json& file_contents);

// Whether the toolkit treats a key as a framework parameter (prefix
// "sagemaker_"), kept out of the user's hyperparameters and arguments.
bool is_framework_parameter(const std::string& key);

// Python's json.dumps(value, sort_keys=True, separators=(",", ":"),
// ensure_ascii=True): how SM_HPS, SM_HOSTS, SM_HP_<NAME> (non-strings) and
// the other JSON-valued SM_* variables are written.
std::string python_json_dumps(const nlohmann::ordered_json& value);

// Python's str(value) of the decoded value: strings as they are, True/False,
// None, floats in repr form ("1e-05", "1.0"), lists as "[1, 'a']".
std::string python_str(const nlohmann::ordered_json& value);

// Python's repr() of a float: shortest round-trip digits, fixed notation for
// exponents -4..15, else "1e-05" / "1.5e+16".
std::string python_float_repr(double value);

// The toolkit's mapping.to_cmd_args(): keys sorted, "--key" ("-k" for a
// one-letter key), then str(value); a mapping value becomes "k=v,k2=v2"
// (sorted); None becomes "".
std::vector<std::string> to_cmd_args(const Hyperparameters& hyperparameters);

// The toolkit's value formatting for environment variables: strings as they
// are, None as "", everything else python_json_dumps().
std::string to_env_value(const nlohmann::ordered_json& value);

// "SM_" + key in upper case, as the toolkit names variables.
std::string env_name(const std::string& key);

}  // namespace dtrain::job
