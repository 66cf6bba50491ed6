#pragma once

#include <simdjson.h>

#include <string>

namespace dtrain::vision {

// COCO JSON (instances files, results) parsed with simdjson's DOM, for the data pipeline's
// reader and the evaluator's loaders alike. Malformed text is a CocoError "SOURCE: malformed
// JSON: ... at line L, column C": simdjson says only that it failed, so nlohmann reads the
// text again to find the place.
simdjson::dom::element parse_coco_json(simdjson::dom::parser& parser, const simdjson::padded_string& text,
                                       const std::string& source);

// "array", "object", "number", "string", "boolean" or "null", for messages.
const char* json_type_name(simdjson::dom::element_type type);

}  // namespace dtrain::vision
