#include "vision/coco/json_syntax.h"

#include <fmt/format.h>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line ..."
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw CocoError(fmt::format("{}: malformed JSON: {}", source, what));
  }
}

}  // namespace dtrain::vision
