#pragma once

// Base64 (RFC 4648, standard alphabet) for images sent inside JSON bodies.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::serving {

// Decodes `text`. Accepts a data-URL prefix ("data:image/png;base64,"),
// line breaks (MIME wraps at 76 columns) and missing '=' padding, as
// browsers and Python's base64 produce them. Throws std::invalid_argument
// naming the first bad character and its offset, or a truncated last group.
std::vector<uint8_t> decode_base64(std::string_view text);

std::string encode_base64(const uint8_t* data, size_t size);

}  // namespace dtrain::serving
