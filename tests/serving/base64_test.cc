// Base64 as clients send images inside JSON: round trips, the forms other
// encoders produce, and the errors a bad body gets.
#include "serving/base64.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtrain::serving {
namespace {

std::string decoded(std::string_view text) {
  const std::vector<uint8_t> bytes = decode_base64(text);
  return std::string(bytes.begin(), bytes.end());
}

std::string error_of(std::string_view text) {
  try {
    decode_base64(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Base64, RoundTripsEveryLength) {
  std::string data;
  for (int length = 0; length < 300; ++length) {
    const std::string encoded = encode_base64(reinterpret_cast<const uint8_t*>(data.data()), data.size());
    EXPECT_EQ(encoded.size() % 4, 0u);
    EXPECT_EQ(decoded(encoded), data) << length;
    data.push_back(static_cast<char>(length * 37 + 11));
  }
}

TEST(Base64, KnownVectorsAndOtherEncodersForms) {
  EXPECT_EQ(encode_base64(reinterpret_cast<const uint8_t*>("foobar"), 6), "Zm9vYmFy");
  EXPECT_EQ(decoded("Zm9vYg=="), "foob");
  EXPECT_EQ(decoded("Zm9vYg"), "foob");         // padding left out
  EXPECT_EQ(decoded("Zm9v\r\nYmE="), "fooba");  // MIME line breaks
  EXPECT_EQ(decoded("data:image/png;base64,Zm9v"), "foo");
}

TEST(Base64, BadInputNamesTheProblem) {
  EXPECT_EQ(error_of("Zm9v!mFy"), "base64: unexpected '!' at offset 4");
  EXPECT_EQ(error_of("Zm9vY"), "base64: truncated (a lone character in the last group)");
  EXPECT_EQ(error_of("Zm9v=YmFy"), "base64: unexpected 'Y' at offset 5");
  EXPECT_EQ(error_of("Zm9v===="), "base64: misplaced '=' padding");
  EXPECT_EQ(error_of(std::string_view("Zm\0v", 4)), "base64: unexpected byte 0x00 at offset 2");
  EXPECT_EQ(error_of("data:image/png,Zm9v"), "base64: a data URL must be data:<type>;base64,<data>");
}

}  // namespace
}  // namespace dtrain::serving
