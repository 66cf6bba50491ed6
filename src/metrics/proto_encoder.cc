#include "metrics/proto_encoder.h"

#include <bit>

namespace dtrain::metrics {

void ProtoEncoder::append_varint(std::uint64_t value) {
  while (value >= 0x80) {
    bytes_.push_back(static_cast<char>((value & 0x7F) | 0x80));  // more bytes follow
    value >>= 7;
  }
  bytes_.push_back(static_cast<char>(value));
}

void ProtoEncoder::append_key(int field, WireType type) {
  append_varint((static_cast<std::uint64_t>(field) << 3) | static_cast<std::uint32_t>(type));
}

void ProtoEncoder::append_little_endian(std::uint64_t value, int byte_count) {
  // Byte by byte rather than memcpy, so the output does not depend on the host's byte order.
  for (int i = 0; i < byte_count; ++i) bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void ProtoEncoder::add_int64(int field, std::int64_t value) {
  append_key(field, WireType::kVarint);
  // int64 (not sint64) is encoded as the two's complement bit pattern, so -1 is ten bytes.
  append_varint(static_cast<std::uint64_t>(value));
}

void ProtoEncoder::add_double(int field, double value) {
  append_key(field, WireType::kFixed64);
  append_little_endian(std::bit_cast<std::uint64_t>(value), 8);
}

void ProtoEncoder::add_float(int field, float value) {
  append_key(field, WireType::kFixed32);
  append_little_endian(std::bit_cast<std::uint32_t>(value), 4);
}

void ProtoEncoder::add_bytes(int field, std::string_view bytes) {
  append_key(field, WireType::kLengthDelimited);
  append_varint(bytes.size());
  bytes_.append(bytes);
}

}  // namespace dtrain::metrics
