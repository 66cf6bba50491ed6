#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace dtrain::vision {

// Parses JSON text; malformed text is a CocoError "SOURCE: malformed JSON: ... at line L,
// column C". The COCO loaders parse with simdjson, which says only that the text is malformed;
// they call this on failure so the message shows where.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

}  // namespace dtrain::vision
