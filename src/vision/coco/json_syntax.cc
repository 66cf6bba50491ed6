#include "vision/coco/json_syntax.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {

namespace dom = simdjson::dom;

dom::element parse_coco_json(dom::parser& parser, const simdjson::padded_string& text, const std::string& source) {
  dom::element root;
  const auto error = parser.parse(text).get(root);
  if (error == simdjson::SUCCESS) return root;
  try {
    (void)nlohmann::json::parse(text.data(), text.data() + text.size());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line ..."
    std::string what = e.what();
    const auto pos = what.find("] ");
    if (pos != std::string::npos) what = what.substr(pos + 2);
    throw CocoError(fmt::format("{}: malformed JSON: {}", source, what));
  }
  throw CocoError(fmt::format("{}: malformed JSON: {}", source, simdjson::error_message(error)));
}

const char* json_type_name(dom::element_type type) {
  switch (type) {
    case dom::element_type::ARRAY: return "array";
    case dom::element_type::OBJECT: return "object";
    case dom::element_type::INT64:
    case dom::element_type::UINT64:
    case dom::element_type::DOUBLE: return "number";
    case dom::element_type::STRING: return "string";
    case dom::element_type::BOOL: return "boolean";
    case dom::element_type::NULL_VALUE: return "null";
  }
  return "value";
}

}  // namespace dtrain::vision
