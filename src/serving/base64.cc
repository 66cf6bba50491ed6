#include "serving/base64.h"

#include <array>
#include <stdexcept>

namespace dtrain::serving {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> decoding_table() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  for (int i = 0; i < 64; ++i) table[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return table;
}

std::string describe(char c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + c + "'";
  static const char kHex[] = "0123456789abcdef";
  const auto byte = static_cast<uint8_t>(c);
  return std::string("byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
}

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text) {
  static constexpr std::array<int8_t, 256> kTable = decoding_table();
  size_t offset = 0;
  if (text.starts_with("data:")) {
    const size_t comma = text.find(',');
    if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos) {
      throw std::invalid_argument("base64: a data URL must be data:<type>;base64,<data>");
    }
    offset = comma + 1;
  }
  std::vector<uint8_t> out;
  out.reserve((text.size() - offset) / 4 * 3 + 3);
  uint32_t group = 0;
  int filled = 0;   // sextets in `group`
  int padding = 0;  // '=' seen: only more '=' (and line breaks) may follow
  for (size_t i = offset; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int8_t value = kTable[static_cast<uint8_t>(c)];
    if (value < 0 || padding > 0) {
      throw std::invalid_argument("base64: unexpected " + describe(c) + " at offset " + std::to_string(i));
    }
    group = (group << 6) | static_cast<uint32_t>(value);
    if (++filled == 4) {
      out.push_back(static_cast<uint8_t>(group >> 16));
      out.push_back(static_cast<uint8_t>(group >> 8));
      out.push_back(static_cast<uint8_t>(group));
      group = 0;
      filled = 0;
    }
  }
  // A last group of 2 or 3 sextets carries 1 or 2 bytes; 1 sextet carries none.
  if (filled == 1) throw std::invalid_argument("base64: truncated (a lone character in the last group)");
  if (filled == 2) out.push_back(static_cast<uint8_t>(group >> 4));
  if (filled == 3) {
    out.push_back(static_cast<uint8_t>(group >> 10));
    out.push_back(static_cast<uint8_t>(group >> 2));
  }
  if (padding > 2 || (padding > 0 && filled == 0)) throw std::invalid_argument("base64: misplaced '=' padding");
  return out;
}

std::string encode_base64(const uint8_t* data, size_t size) {
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t remaining = static_cast<uint32_t>(size - i);
    uint32_t group = uint32_t{data[i]} << 16;
    if (remaining > 1) group |= uint32_t{data[i + 1]} << 8;
    if (remaining > 2) group |= data[i + 2];
    out.push_back(kAlphabet[(group >> 18) & 63]);
    out.push_back(kAlphabet[(group >> 12) & 63]);
    out.push_back(remaining > 1 ? kAlphabet[(group >> 6) & 63] : '=');
    out.push_back(remaining > 2 ? kAlphabet[group & 63] : '=');
  }
  return out;
}

}  // namespace dtrain::serving
