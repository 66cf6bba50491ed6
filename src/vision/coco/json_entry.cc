#include "vision/coco/json_entry.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

bool is_integral(const nlohmann::json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

}  // namespace

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CocoError(fmt::format("{}: cannot open file", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw CocoError(fmt::format("{}: cannot read file", path));
  return parse_json_text(buffer.str(), path);
}

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

JsonEntry::JsonEntry(const nlohmann::json& value, const std::string& source, const char* list,
                     size_t index)
    : value_(value), source_(source), list_(list), index_(index) {
  if (!value_.is_object()) fail(fmt::format("expected an object, got {}", value_.type_name()));
}

std::string JsonEntry::location() const {
  return fmt::format("{}: {}[{}]", source_, list_, index_);
}

void JsonEntry::fail(const std::string& what) const {
  throw CocoError(fmt::format("{}: {}", location(), what));
}

bool JsonEntry::has(const char* field) const { return value_.contains(field); }

const nlohmann::json& JsonEntry::field(const char* name) const {
  const auto it = value_.find(name);
  if (it == value_.end()) fail(fmt::format("missing field '{}'", name));
  return *it;
}

double JsonEntry::number(const char* name) const {
  const auto& v = field(name);
  if (!v.is_number()) fail(fmt::format("field '{}' must be a number, got {}", name, v.type_name()));
  return v.get<double>();
}

int64_t JsonEntry::integer(const char* name) const {
  const auto& v = field(name);
  if (!is_integral(v)) fail(fmt::format("field '{}' must be an integer, got {}", name, v.dump()));
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()}) {
    fail(fmt::format("field '{}' is out of range", name));
  }
  return v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
}

uint32_t JsonEntry::dimension(const char* name) const {
  const int64_t v = integer(name);
  if (v < 0 || v >= (int64_t{1} << 31)) fail(fmt::format("field '{}' must be a size >= 0", name));
  return static_cast<uint32_t>(v);
}

bool JsonEntry::flag(const char* name) const {
  const auto& v = field(name);
  if (v.is_boolean()) return v.get<bool>();
  if (is_integral(v)) return v.get<double>() != 0;
  fail(fmt::format("field '{}' must be 0 or 1, got {}", name, v.dump()));
}

std::string JsonEntry::text(const char* name) const {
  const auto& v = field(name);
  if (!v.is_string()) fail(fmt::format("field '{}' must be a string", name));
  return v.get<std::string>();
}

BoundingBox JsonEntry::box(const char* name) const {
  const auto& v = field(name);
  if (!v.is_array() || v.size() != 4 || !v[0].is_number() || !v[1].is_number() ||
      !v[2].is_number() || !v[3].is_number()) {
    fail(fmt::format("field '{}' must be [x, y, width, height], got {}", name, v.dump()));
  }
  return {v[0].get<double>(), v[1].get<double>(), v[2].get<double>(), v[3].get<double>()};
}

Segmentation JsonEntry::segmentation(const char* name) const {
  const auto& v = field(name);
  if (v.is_array()) {
    Polygons polygons;
    polygons.reserve(v.size());
    for (const auto& polygon : v) {
      if (!polygon.is_array()) {
        fail(fmt::format("field '{}' must be a list of polygons (lists of numbers)", name));
      }
      std::vector<double>& xy = polygons.emplace_back();
      xy.reserve(polygon.size());
      for (const auto& coordinate : polygon) {
        if (!coordinate.is_number()) fail(fmt::format("field '{}' has a non-numeric coordinate", name));
        xy.push_back(coordinate.get<double>());
      }
    }
    return polygons;
  }
  if (!v.is_object()) {
    fail(fmt::format("field '{}' must be polygons or an RLE object, got {}", name, v.type_name()));
  }
  const auto size = v.find("size");
  const auto counts = v.find("counts");
  if (size == v.end() || counts == v.end()) {
    fail(fmt::format("field '{}' is an RLE without 'size' or 'counts'", name));
  }
  if (!size->is_array() || size->size() != 2 || !is_integral((*size)[0]) ||
      !is_integral((*size)[1]) || (*size)[0].get<double>() < 0 || (*size)[1].get<double>() < 0 ||
      (*size)[0].get<double>() >= 2147483648.0 || (*size)[1].get<double>() >= 2147483648.0) {
    fail(fmt::format("field '{}.size' must be [height, width]", name));
  }
  const auto height = static_cast<uint32_t>((*size)[0].get<double>());
  const auto width = static_cast<uint32_t>((*size)[1].get<double>());
  if (counts->is_string()) return CompressedRle{height, width, counts->get<std::string>()};
  if (counts->is_array()) {
    RunLengthMask mask{height, width, {}};
    mask.counts.reserve(counts->size());
    for (const auto& c : *counts) {
      if (!is_integral(c) || c.get<double>() < 0 || c.get<double>() > 4294967295.0) {
        fail(fmt::format("field '{}.counts' must hold non-negative integers", name));
      }
      mask.counts.push_back(static_cast<uint32_t>(c.get<double>()));
    }
    return mask;
  }
  fail(fmt::format("field '{}.counts' must be a string or a list", name));
}

}  // namespace dtrain::vision
