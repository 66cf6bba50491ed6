// The runtime's own settings: a value the runtime cannot use is an error at init naming the
// variable and the value, not a silent default (spdlog reads an unknown level as "off").
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "dtrain/dtrain.h"
#include "runtime/environment.h"

namespace dtrain::runtime {
namespace {

// The message read_config_from_environment() throws with `name`=`value`, or "" if none.
std::string error_with(const char* name, const char* value) {
  setenv(name, value, 1);
  std::string message;
  try {
    read_config_from_environment();
  } catch (const Error& e) {
    message = e.what();
  }
  unsetenv(name);
  return message;
}

TEST(RuntimeEnvironment, ALogLevelSpdlogDoesNotKnowIsRefused) {
  EXPECT_EQ(error_with("DTRAIN_LOG_LEVEL", "debug"), "");
  EXPECT_EQ(error_with("DTRAIN_LOG_LEVEL", "warning"), "");
  const std::string message = error_with("DTRAIN_LOG_LEVEL", "verbose");
  EXPECT_NE(message.find("DTRAIN_LOG_LEVEL must be trace, debug, info, warn, error, critical or off (got 'verbose')"),
            std::string::npos)
      << message;
}

TEST(RuntimeEnvironment, ATimeoutMustBeAPositiveNumberOfSeconds) {
  EXPECT_EQ(error_with("DTRAIN_TIMEOUT_S", "2.5"), "");
  for (const char* bad : {"0", "-5", "inf"}) {
    const std::string message = error_with("DTRAIN_TIMEOUT_S", bad);
    EXPECT_NE(message.find("DTRAIN_TIMEOUT_S must be a number of seconds above 0 (got " + std::string(bad) + ")"),
              std::string::npos)
        << bad << ": " << message;
  }
  const std::string typo = error_with("DTRAIN_TIMEOUT_S", "2m");
  EXPECT_NE(typo.find("DTRAIN_TIMEOUT_S='2m' is not a valid number"), std::string::npos) << typo;
}

}  // namespace
}  // namespace dtrain::runtime
