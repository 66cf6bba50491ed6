// Settings from the environment: a value is taken whole or refused in one line that names the
// variable, the value and what was expected; unset and empty mean "not given".
#include "settings/env_setting.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dtrain::settings {
namespace {

constexpr const char* kName = "DTRAIN_SETTINGS_TEST_VALUE";

// Sets kName for one test and removes it after.
class EnvSetting : public ::testing::Test {
 protected:
  void set(const char* value) { setenv(kName, value, 1); }
  void TearDown() override { unsetenv(kName); }
};

// The error's text, or "" when the call succeeded.
template <typename Call>
std::string error_of(Call call) {
  try {
    call();
  } catch (const SettingError& e) {
    return e.what();
  }
  return "";
}

TEST_F(EnvSetting, UnsetAndEmptyAreNotGiven) {
  EXPECT_FALSE(env_text(kName));
  EXPECT_FALSE(env_integer(kName, 0, 10, "a count"));
  set("");
  EXPECT_FALSE(env_text(kName));
  EXPECT_FALSE(env_seconds(kName));
  EXPECT_FALSE(env_port(kName));
}

TEST_F(EnvSetting, WellFormedValuesAreTakenWhole) {
  set("29417");
  EXPECT_EQ(env_port(kName), 29417);
  EXPECT_EQ(env_integer(kName, 0, 100000, "a count"), 29417);
  EXPECT_EQ(env_seconds(kName), 29417.0);
  set("2.5");
  EXPECT_EQ(env_seconds(kName), 2.5);
  set("1e-3");
  EXPECT_EQ(env_seconds(kName), 0.001);
  set("0");
  EXPECT_EQ(env_integer(kName, 0, 1, "a node index"), 0);
}

TEST_F(EnvSetting, ATypoIsAnErrorNamingTheVariableTheValueAndTheExpectation) {
  set("2m");  // two minutes? atof took it as 2 seconds
  EXPECT_EQ(error_of([] { env_seconds(kName); }),
            "DTRAIN_SETTINGS_TEST_VALUE='2m' is not a number of seconds: expected a decimal above 0, e.g. 300 or 2.5");
  set("29x");  // atoi took it as 29
  EXPECT_EQ(error_of([] { env_port(kName); }),
            "DTRAIN_SETTINGS_TEST_VALUE='29x' is not a port: expected a whole number from 1 to 65535");
  set("one");  // atoi took it as 0
  EXPECT_EQ(error_of([] { env_integer(kName, 0, 7, "a node index"); }),
            "DTRAIN_SETTINGS_TEST_VALUE='one' is not a node index: expected a whole number from 0 to 7");
}

TEST_F(EnvSetting, ValuesOutsideTheirRangeAreRefused) {
  for (const char* bad : {"0", "65536", "-80", " 80", "80 ", "+80"}) {
    set(bad);
    EXPECT_NE(error_of([] { env_port(kName); }), "") << bad;
  }
  for (const char* bad : {"0", "-1", "inf", "nan", "1e999", "0x10", " 5"}) {
    set(bad);
    EXPECT_NE(error_of([] { env_seconds(kName); }), "") << bad;
  }
  set("8");
  EXPECT_NE(error_of([] { env_integer(kName, 0, 7, "a node index"); }), "");
}

}  // namespace
}  // namespace dtrain::settings
