#include "metrics/proto_encoder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "metrics/crc32c.h"
#include "metrics/tfrecord_writer.h"

namespace dtrain::metrics {
namespace {

std::string bytes(std::initializer_list<unsigned> values) {
  std::string s;
  for (unsigned v : values) s.push_back(static_cast<char>(v));
  return s;
}

TEST(ProtoEncoder, VarintsFollowTheSpecificationExamples) {
  const auto varint = [](std::uint64_t v) {
    ProtoEncoder e;
    e.append_varint(v);
    return e.bytes();
  };
  EXPECT_EQ(varint(0), bytes({0x00}));
  EXPECT_EQ(varint(1), bytes({0x01}));
  EXPECT_EQ(varint(127), bytes({0x7F}));
  EXPECT_EQ(varint(150), bytes({0x96, 0x01}));
  EXPECT_EQ(varint(300), bytes({0xAC, 0x02}));
  EXPECT_EQ(varint(UINT64_MAX), bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));
}

TEST(ProtoEncoder, FieldsCarryKeyAndValue) {
  ProtoEncoder int_field;
  int_field.add_int64(1, 150);
  EXPECT_EQ(int_field.bytes(), bytes({0x08, 0x96, 0x01}));

  ProtoEncoder negative;  // int64 -1: ten-byte two's complement varint
  negative.add_int64(2, -1);
  EXPECT_EQ(negative.bytes(), bytes({0x10, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01}));

  ProtoEncoder string_field;
  string_field.add_bytes(2, "testing");
  EXPECT_EQ(string_field.bytes(), bytes({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}));

  ProtoEncoder double_field;  // 1.0 = 0x3FF0000000000000, little-endian
  double_field.add_double(1, 1.0);
  EXPECT_EQ(double_field.bytes(), bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}));

  ProtoEncoder float_field;  // 1.0f = 0x3F800000, little-endian
  float_field.add_float(2, 1.0f);
  EXPECT_EQ(float_field.bytes(), bytes({0x15, 0, 0, 0x80, 0x3F}));

  ProtoEncoder outer;
  outer.add_message(3, int_field);
  EXPECT_EQ(outer.bytes(), bytes({0x1A, 0x03, 0x08, 0x96, 0x01}));
}

TEST(TFRecordFraming, LengthCrcDataCrc) {
  const std::string data = "abc";
  const std::string record = TFRecordWriter::frame(data);
  ASSERT_EQ(record.size(), 8 + 4 + data.size() + 4);
  EXPECT_EQ(record.substr(0, 8), bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  const auto u32_at = [&](std::size_t offset) {
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(record[offset + i]);
    return v;
  };
  EXPECT_EQ(u32_at(8), masked_crc32c(crc32c(record.data(), 8)));
  EXPECT_EQ(record.substr(12, 3), data);
  EXPECT_EQ(u32_at(15), masked_crc32c(crc32c(data)));
}

}  // namespace
}  // namespace dtrain::metrics
