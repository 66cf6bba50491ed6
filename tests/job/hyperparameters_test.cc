#include "job/hyperparameters.h"

#include <gtest/gtest.h>

namespace dtrain::job {
namespace {

using Json = nlohmann::ordered_json;

TEST(PythonFormat, FloatReprMatchesPython) {
  EXPECT_EQ(python_float_repr(0.001), "0.001");
  EXPECT_EQ(python_float_repr(1e-05), "1e-05");
  EXPECT_EQ(python_float_repr(1.0), "1.0");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(python_float_repr(1.5e-7), "1.5e-07");
  EXPECT_EQ(python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(python_float_repr(0.1), "0.1");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
}

TEST(PythonFormat, JsonDumpsIsCompactSortedAndAscii) {
  Json value = Json::parse(R"({"b": [1, 2.5, true, null], "a": "caf\u00e9 \"q\"\n"})");
  EXPECT_EQ(python_json_dumps(value), R"({"a":"caf\u00e9 \"q\"\n","b":[1,2.5,true,null]})");
}

TEST(PythonFormat, StrOfContainersUsesPythonRepr) {
  EXPECT_EQ(python_str(Json::parse(R"([1, "a", true, null, 2.5])")), "[1, 'a', True, None, 2.5]");
  EXPECT_EQ(python_str(Json("it's")), "it's");
  EXPECT_EQ(python_str(Json::parse(R"(["it's"])")), R"(["it's"])");
  EXPECT_EQ(python_str(Json(false)), "False");
}

TEST(Hyperparameters, EncodeIsJsonDumpsOfEachValue) {
  EXPECT_EQ(encode_hyperparameter(Json("adam")), "\"adam\"");
  EXPECT_EQ(encode_hyperparameter(Json(64)), "64");
  EXPECT_EQ(encode_hyperparameter(Json(true)), "true");
  EXPECT_EQ(encode_hyperparameter(Json(0.5)), "0.5");
}

TEST(Hyperparameters, DecodeParsesJsonStringsAndKeepsOthers) {
  Json file = Json::parse(R"({"a": "10", "b": "\"adam\"", "c": "plain text", "d": "true", "e": 7})");
  Hyperparameters hp = decode_hyperparameters(file);
  EXPECT_EQ(hp["a"], Json(10));
  EXPECT_EQ(hp["b"], Json("adam"));
  EXPECT_EQ(hp["c"], Json("plain text"));
  EXPECT_EQ(hp["d"], Json(true));
  EXPECT_EQ(hp["e"], Json(7));
}

TEST(Hyperparameters, CmdArgsAreSortedWithPythonStr) {
  Hyperparameters hp = Json::parse(
      R"({"x": 1.0, "use_amp": true, "options": {"b": 2, "a": "x"}, "layers": [64, 32], "name": "plain text", "nothing": null})");
  std::vector<std::string> expected = {"--layers",  "[64, 32]", "--name",    "plain text", "--nothing", "",
                                       "--options", "a=x,b=2",  "--use_amp", "True",       "-x",        "1.0"};
  EXPECT_EQ(to_cmd_args(hp), expected);
}

TEST(Hyperparameters, EnvValuesAndNames) {
  EXPECT_EQ(to_env_value(Json("adam")), "adam");
  EXPECT_EQ(to_env_value(Json(true)), "true");
  EXPECT_EQ(to_env_value(Json(nullptr)), "");
  EXPECT_EQ(to_env_value(Json::parse(R"({"b":2,"a":"x"})")), R"({"a":"x","b":2})");
  EXPECT_EQ(env_name("hp_learning_rate"), "SM_HP_LEARNING_RATE");
  EXPECT_TRUE(is_framework_parameter("sagemaker_program"));
  EXPECT_FALSE(is_framework_parameter("lr"));
}

}  // namespace
}  // namespace dtrain::job
