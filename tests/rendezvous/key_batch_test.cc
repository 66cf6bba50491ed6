#include "rendezvous/key_batch.h"

#include <gtest/gtest.h>

#include <functional>

#include "dtrain/error.h"

namespace dtrain::rendezvous {
namespace {

std::string error_of(const std::function<void()>& decode) {
  try {
    decode();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(KeyBatch, KeysAndValuesRoundTrip) {
  const std::vector<std::string> keys = {"job/mesh/0", "job.1:x-y_z"};
  EXPECT_EQ(parse_key_list(encode_key_list(keys), 10), keys);
  const std::vector<std::string> values = {"", "10.0.0.1:2000", std::string("a\n3\nb\0", 6)};
  EXPECT_EQ(decode_values(encode_values(values), values.size()), values);
  EXPECT_EQ(parse_key_list("last/without/newline", 1), std::vector<std::string>{"last/without/newline"});
}

TEST(KeyBatch, ABadKeyListNamesTheLine) {
  EXPECT_EQ(error_of([] { parse_key_list("a\n\nb\n", 10); }),
            "dtrain rendezvous: line 2 of the wait's key list is not a key ([A-Za-z0-9._/:-]+)");
  EXPECT_EQ(error_of([] { parse_key_list("a b\n", 10); }),
            "dtrain rendezvous: line 1 of the wait's key list is not a key ([A-Za-z0-9._/:-]+)");
  EXPECT_EQ(error_of([] { parse_key_list("a\nb\nc\n", 2); }), "dtrain rendezvous: a wait names more than 2 keys");
  EXPECT_EQ(error_of([] { parse_key_list("", 2); }), "dtrain rendezvous: a wait names no keys");
}

// An answer is outside bytes: a length is checked against what follows before it is used.
TEST(KeyBatch, AMalformedAnswerIsAnErrorNamingWhere) {
  EXPECT_EQ(error_of([] { decode_values("3\nab", 1); }),
            "dtrain rendezvous: the store's answer to a wait is malformed at byte 2 of 4: a value of 3 bytes where 2 "
            "remain");
  EXPECT_EQ(error_of([] { decode_values("99999999999999999999999\nab", 1); }),
            "dtrain rendezvous: the store's answer to a wait is malformed at byte 0 of 26: a value's length is not a "
            "number");
  EXPECT_EQ(error_of([] { decode_values("\nab", 1); }),
            "dtrain rendezvous: the store's answer to a wait is malformed at byte 0 of 3: a value's length is not a "
            "number");
  EXPECT_EQ(error_of([] { decode_values("1\na", 2); }),
            "dtrain rendezvous: the store's answer to a wait is malformed at byte 3 of 3: value 2 of 2 is missing");
  EXPECT_EQ(error_of([] { decode_values("1\naxy", 1); }),
            "dtrain rendezvous: the store's answer to a wait is malformed at byte 3 of 5: 2 bytes after the 1 values");
}

}  // namespace
}  // namespace dtrain::rendezvous
