#pragma once

// Settings read from the environment (DTRAIN_*, and the SageMaker and Slurm variables dtrain
// reads), checked: a malformed value is a one-line error naming the variable, its value and
// what was expected, never silently another value (atoi("2m") is 2, atoi("x") is 0).
// An unset or empty variable means "not given" everywhere.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace dtrain::settings {

class SettingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> env_text(const char* name);

// A whole number in [min, max], all of the value (no sign for min >= 0, no trailing text);
// `what` names its meaning for the error ("a port", "a node index"). Throws SettingError:
//   DTRAIN_HOST_PORT='29x' is not a port: expected a whole number from 1 to 65535
std::optional<int64_t> env_integer(const char* name, int64_t min, int64_t max, const char* what);

// A decimal number of seconds above zero ("2.5", not "2m" or "inf"). Throws SettingError.
std::optional<double> env_seconds(const char* name);

// A TCP port, 1 to 65535. Throws SettingError.
std::optional<int> env_port(const char* name);

}  // namespace dtrain::settings
