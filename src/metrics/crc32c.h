// CRC-32C (Castagnoli), the checksum of TFRecord framing, in software: a 256-entry table built
// at compile time for the reflected polynomial 0x82F63B78. Event files are small and written
// rarely, so a byte-at-a-time loop is fast enough and needs no CPU dispatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dtrain::metrics {

// Continues a CRC-32C: crc32c_extend(crc32c(a), b) == crc32c(a + b). Start from 0.
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);

inline std::uint32_t crc32c(const void* data, std::size_t size) { return crc32c_extend(0, data, size); }
inline std::uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

// TFRecord stores CRCs "masked": a CRC of data that itself holds CRCs would otherwise be
// weak, so the value is rotated right by 15 bits and offset by a constant.
constexpr std::uint32_t masked_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
constexpr std::uint32_t unmasked_crc32c(std::uint32_t masked) {
  const std::uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace dtrain::metrics
