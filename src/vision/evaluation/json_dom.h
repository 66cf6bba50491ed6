#pragma once

// simdjson's DOM for the evaluator's loaders (ground truth and results), with
// the conventions of the data pipeline's reader (vision/data): every failure
// is a one-line CocoError "FILE: LIST[INDEX]: field 'NAME' ...". Private to
// dtrain_coco_eval.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vision/coco/bounding_box.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::vision::json_dom {

namespace dom = simdjson::dom;

// The file's bytes with simdjson's padding; "FILE: cannot open file" or
// "FILE: cannot read file" otherwise.
simdjson::padded_string read_file(const std::string& path);

// The document's root. Malformed JSON is "SOURCE: malformed JSON: ..." with
// the line and column (nlohmann reads the text again only to find them).
dom::element parse(dom::parser& parser, const simdjson::padded_string& text, const std::string& source);

// The value of `name` in `object`; with a repeated key the last one counts,
// as in Python's json and nlohmann.
std::optional<dom::element> find(dom::object object, std::string_view name);

// nlohmann's names: object, array, string, number, boolean, null.
const char* type_name(dom::element value);
// The value as compact JSON, for messages.
std::string to_text(dom::element value);
bool is_empty_array(dom::element value);

// A compressed RLE whose counts string is still in the parser's buffer.
struct RleText {
  uint32_t height = 0;
  uint32_t width = 0;
  std::string_view counts;
};

// One object of a COCO JSON list with typed field access (integral ids may be
// written as floats, as pycocotools accepts them).
class Entry {
 public:
  Entry(dom::element value, const std::string& source, const char* list, size_t index);

  bool has(const char* name) const { return find(name).has_value(); }
  std::optional<dom::element> find(const char* name) const;
  dom::element field(const char* name) const;  // must be present

  double number(const char* name) const;
  int64_t integer(const char* name) const;     // integral numbers only
  uint32_t dimension(const char* name) const;  // integer in [0, 2^31)
  bool flag(const char* name) const;           // 0/1 or true/false
  std::string text(const char* name) const;
  BoundingBox box(const char* name) const;  // [x, y, w, h]
  Segmentation segmentation(const char* name) const;
  // The field when it is a compressed RLE (checked as segmentation() checks
  // it), its counts a view into the parser's buffer; nullopt for polygons or
  // an uncompressed RLE.
  std::optional<RleText> compressed_rle(const char* name) const;

  [[noreturn]] void fail(const std::string& what) const;
  std::string location() const;

 private:
  // size [height, width] of the RLE object `rle` of field `name`, and its counts.
  void rle_parts(dom::object rle, const char* name, uint32_t& height, uint32_t& width, dom::element& counts) const;

  dom::object object_;
  const std::string& source_;
  const char* list_;
  size_t index_;
};

}  // namespace dtrain::vision::json_dom
