// A minimal protobuf wire-format encoder: just what event_file_writer needs to build
// tensorflow.Event / Summary messages without libprotobuf or generated code.
//
// Wire format recap (https://protobuf.dev/programming-guides/encoding/): a message is a
// sequence of fields, each a key varint (field_number << 3 | wire_type) followed by the value.
// Varints are 7 bits per byte, least significant group first, high bit set on all but the last.
// Fixed-width values (double, float) are little-endian; strings and nested messages are a
// varint length followed by the bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dtrain::metrics {

class ProtoEncoder {
 public:
  enum class WireType : std::uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

  // int64 field (proto type int64): negative values take ten bytes, as protobuf specifies.
  void add_int64(int field, std::int64_t value);
  // double field (wire type 1, IEEE-754 binary64, little-endian).
  void add_double(int field, double value);
  // float field (wire type 5, IEEE-754 binary32, little-endian).
  void add_float(int field, float value);
  // string or bytes field.
  void add_bytes(int field, std::string_view bytes);
  // Embedded message field: the nested message is written as length-delimited bytes.
  void add_message(int field, const ProtoEncoder& message) { add_bytes(field, message.bytes()); }

  const std::string& bytes() const { return bytes_; }

  // Raw pieces, public so tests can check them against the specification's examples.
  void append_varint(std::uint64_t value);
  void append_key(int field, WireType type);

 private:
  void append_little_endian(std::uint64_t value, int byte_count);

  std::string bytes_;
};

}  // namespace dtrain::metrics
