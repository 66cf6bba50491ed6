#include "vision/evaluation/json_dom.h"

#include <cmath>
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/coco/json_syntax.h"

namespace dtrain::vision::json_dom {
namespace {

bool is_number(dom::element v) {
  const dom::element_type t = v.type();
  return t == dom::element_type::INT64 || t == dom::element_type::UINT64 || t == dom::element_type::DOUBLE;
}

int64_t int64_of(dom::element v) { return v.get_int64().value_unsafe(); }
uint64_t uint64_of(dom::element v) { return v.get_uint64().value_unsafe(); }
double double_of(dom::element v) { return v.get_double().value_unsafe(); }

// nlohmann's get<double>() of any number.
double as_double(dom::element v) {
  switch (v.type()) {
    case dom::element_type::INT64: return static_cast<double>(int64_of(v));
    case dom::element_type::UINT64: return static_cast<double>(uint64_of(v));
    default: return double_of(v);
  }
}

// An integer, or a float with an integral value (as pycocotools accepts ids).
bool is_integral(dom::element v) {
  const dom::element_type t = v.type();
  if (t == dom::element_type::INT64 || t == dom::element_type::UINT64) return true;
  if (t != dom::element_type::DOUBLE) return false;
  const double d = double_of(v);
  return std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e15;
}

}  // namespace

simdjson::padded_string read_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw CocoError(fmt::format("{}: cannot open file", path));
  const auto cannot_read = [&] { return CocoError(fmt::format("{}: cannot read file", path)); };
  if (std::fseek(file.get(), 0, SEEK_END) != 0) throw cannot_read();
  const long size = std::ftell(file.get());
  if (size < 0 || std::fseek(file.get(), 0, SEEK_SET) != 0) throw cannot_read();
  simdjson::padded_string text(static_cast<size_t>(size));
  if (size > 0 && text.data() == nullptr) throw CocoError(fmt::format("{}: out of memory", path));
  if (std::fread(text.data(), 1, text.size(), file.get()) != text.size()) throw cannot_read();
  return text;
}

dom::element parse(dom::parser& parser, const simdjson::padded_string& text, const std::string& source) {
  return parse_coco_json(parser, text, source);
}

std::optional<dom::element> find(dom::object object, std::string_view name) {
  std::optional<dom::element> found;
  for (const dom::key_value_pair field : object) {
    if (field.key == name) found = field.value;
  }
  return found;
}

const char* type_name(dom::element value) { return json_type_name(value.type()); }

std::string to_text(dom::element value) { return simdjson::minify(value); }

bool is_empty_array(dom::element value) {
  dom::array a;
  return value.get_array().get(a) == simdjson::SUCCESS && a.begin() == a.end();
}

Entry::Entry(dom::element value, const std::string& source, const char* list, size_t index)
    : source_(source), list_(list), index_(index) {
  if (value.get_object().get(object_) != simdjson::SUCCESS) {
    fail(fmt::format("expected an object, got {}", type_name(value)));
  }
}

std::string Entry::location() const { return fmt::format("{}: {}[{}]", source_, list_, index_); }

void Entry::fail(const std::string& what) const { throw CocoError(fmt::format("{}: {}", location(), what)); }

std::optional<dom::element> Entry::find(const char* name) const { return json_dom::find(object_, name); }

dom::element Entry::field(const char* name) const {
  const std::optional<dom::element> v = find(name);
  if (!v) fail(fmt::format("missing field '{}'", name));
  return *v;
}

double Entry::number(const char* name) const {
  const dom::element v = field(name);
  if (!is_number(v)) fail(fmt::format("field '{}' must be a number, got {}", name, type_name(v)));
  return as_double(v);
}

int64_t Entry::integer(const char* name) const {
  const dom::element v = field(name);
  if (!is_integral(v)) fail(fmt::format("field '{}' must be an integer, got {}", name, to_text(v)));
  switch (v.type()) {
    case dom::element_type::INT64: return int64_of(v);
    case dom::element_type::UINT64: fail(fmt::format("field '{}' is out of range", name));
    default: return static_cast<int64_t>(double_of(v));
  }
}

uint32_t Entry::dimension(const char* name) const {
  const int64_t v = integer(name);
  if (v < 0 || v >= (int64_t{1} << 31)) fail(fmt::format("field '{}' must be a size >= 0", name));
  return static_cast<uint32_t>(v);
}

bool Entry::flag(const char* name) const {
  const dom::element v = field(name);
  bool b = false;
  if (v.get_bool().get(b) == simdjson::SUCCESS) return b;
  if (is_integral(v)) return as_double(v) != 0;
  fail(fmt::format("field '{}' must be 0 or 1, got {}", name, to_text(v)));
}

std::string Entry::text(const char* name) const {
  std::string_view s;
  if (field(name).get_string().get(s) != simdjson::SUCCESS) {
    fail(fmt::format("field '{}' must be a string", name));
  }
  return std::string(s);
}

BoundingBox Entry::box(const char* name) const {
  const dom::element v = field(name);
  dom::array a;
  double xywh[4];
  size_t n = 0;
  bool ok = v.get_array().get(a) == simdjson::SUCCESS;
  if (ok) {
    for (const dom::element c : a) {
      if (n == 4 || !is_number(c)) {
        ok = false;
        break;
      }
      xywh[n++] = as_double(c);
    }
  }
  if (!ok || n != 4) {
    fail(fmt::format("field '{}' must be [x, y, width, height], got {}", name, to_text(v)));
  }
  return {xywh[0], xywh[1], xywh[2], xywh[3]};
}

void Entry::rle_parts(dom::object rle, const char* name, uint32_t& height, uint32_t& width,
                      dom::element& counts) const {
  const std::optional<dom::element> size = json_dom::find(rle, "size");
  const std::optional<dom::element> found_counts = json_dom::find(rle, "counts");
  if (!size || !found_counts) fail(fmt::format("field '{}' is an RLE without 'size' or 'counts'", name));
  counts = *found_counts;
  dom::array hw;
  double d[2] = {-1, -1};
  size_t n = 0;
  bool ok = size->get_array().get(hw) == simdjson::SUCCESS;
  if (ok) {
    for (const dom::element s : hw) {
      if (n == 2 || !is_integral(s)) {
        ok = false;
        break;
      }
      d[n++] = as_double(s);
    }
  }
  if (!ok || n != 2 || d[0] < 0 || d[1] < 0 || d[0] >= 2147483648.0 || d[1] >= 2147483648.0) {
    fail(fmt::format("field '{}.size' must be [height, width]", name));
  }
  height = static_cast<uint32_t>(d[0]);
  width = static_cast<uint32_t>(d[1]);
}

std::optional<RleText> Entry::compressed_rle(const char* name) const {
  dom::object rle;
  if (field(name).get_object().get(rle) != simdjson::SUCCESS) return std::nullopt;
  RleText out;
  dom::element counts;
  rle_parts(rle, name, out.height, out.width, counts);
  if (counts.get_string().get(out.counts) != simdjson::SUCCESS) return std::nullopt;
  return out;
}

Segmentation Entry::segmentation(const char* name) const {
  const dom::element v = field(name);
  dom::array list;
  if (v.get_array().get(list) == simdjson::SUCCESS) {
    Polygons polygons;
    polygons.reserve(list.size());
    for (const dom::element polygon : list) {
      dom::array numbers;
      if (polygon.get_array().get(numbers) != simdjson::SUCCESS) {
        fail(fmt::format("field '{}' must be a list of polygons (lists of numbers)", name));
      }
      std::vector<double>& xy = polygons.emplace_back();
      xy.reserve(numbers.size());
      for (const dom::element coordinate : numbers) {
        if (!is_number(coordinate)) fail(fmt::format("field '{}' has a non-numeric coordinate", name));
        xy.push_back(as_double(coordinate));
      }
    }
    return polygons;
  }
  dom::object rle;
  if (v.get_object().get(rle) != simdjson::SUCCESS) {
    fail(fmt::format("field '{}' must be polygons or an RLE object, got {}", name, type_name(v)));
  }
  uint32_t height = 0, width = 0;
  dom::element counts;
  rle_parts(rle, name, height, width, counts);
  std::string_view text;
  if (counts.get_string().get(text) == simdjson::SUCCESS) {
    return CompressedRle{height, width, std::string(text)};
  }
  dom::array runs;
  if (counts.get_array().get(runs) == simdjson::SUCCESS) {
    RunLengthMask mask{height, width, {}};
    mask.counts.reserve(runs.size());
    for (const dom::element c : runs) {
      if (!is_integral(c) || as_double(c) < 0 || as_double(c) > 4294967295.0) {
        fail(fmt::format("field '{}.counts' must hold non-negative integers", name));
      }
      mask.counts.push_back(static_cast<uint32_t>(as_double(c)));
    }
    return mask;
  }
  fail(fmt::format("field '{}.counts' must be a string or a list", name));
}

}  // namespace dtrain::vision::json_dom
