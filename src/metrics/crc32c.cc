#include "metrics/crc32c.h"

#include <array>

namespace dtrain::metrics {
namespace {

// Bit-reflected Castagnoli polynomial 0x1EDC6F41: bits are processed least significant first.
constexpr std::uint32_t kCastagnoliReflected = 0x82F63B78u;

// table[b] is the CRC register after shifting the byte b through it with a zero start.
constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ kCastagnoliReflected : crc >> 1;
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size) {
  // The register is kept inverted between calls (initial value and final xor 0xFFFFFFFF),
  // which is what makes extending a finished CRC with more bytes work.
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t reg = ~crc;
  for (std::size_t i = 0; i < size; ++i) reg = kTable[(reg ^ p[i]) & 0xFFu] ^ (reg >> 8);
  return ~reg;
}

}  // namespace dtrain::metrics
