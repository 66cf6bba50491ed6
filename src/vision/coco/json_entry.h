#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "vision/coco/bounding_box.h"
#include "vision/coco/coco_annotation.h"

namespace dtrain::vision {

// Reads a COCO JSON file's text; a missing file or malformed JSON is a
// CocoError naming the file.
nlohmann::json read_json_file(const std::string& path);
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

// One object of a COCO JSON list (an image, an annotation, a detection) with
// typed field access. Every failure is a CocoError of the form
// "FILE: LIST[INDEX]: field 'NAME' ...", so the user can find the entry.
class JsonEntry {
 public:
  JsonEntry(const nlohmann::json& value, const std::string& source, const char* list, size_t index);

  bool has(const char* field) const;
  const nlohmann::json& field(const char* name) const;  // must be present

  double number(const char* name) const;
  int64_t integer(const char* name) const;  // integral numbers only
  uint32_t dimension(const char* name) const;  // integer in [0, 2^31)
  bool flag(const char* name) const;  // 0/1 or true/false
  std::string text(const char* name) const;
  BoundingBox box(const char* name) const;  // [x, y, w, h]
  Segmentation segmentation(const char* name) const;

  [[noreturn]] void fail(const std::string& what) const;
  std::string location() const;

 private:
  const nlohmann::json& value_;
  const std::string& source_;
  const char* list_;
  size_t index_;
};

}  // namespace dtrain::vision
