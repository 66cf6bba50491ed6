#include "vision/report/category_table_format.h"

#include <fmt/format.h>

namespace dtrain::vision {
namespace {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// Markdown cells cannot hold a bare '|' or a line break.
std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string markdown_value(double v) { return v > -1 ? fmt::format("{:0.3f}", v) : "n/a"; }

std::string markdown_row(const std::string& id, const std::string& name, const CategoryRow& row) {
  std::string line = fmt::format("| {} | {} |", id, name);
  for (double v : row.ap) line += " " + markdown_value(v) + " |";
  return line + fmt::format(" {} | {} |\n", row.ground_truths, row.detections);
}

}  // namespace

std::string category_table_csv(const CategoryTable& table) {
  std::string out = "id,name";
  for (const char* name : kPrecisionStatistics) out += fmt::format(",{}", name);
  out += ",ground_truths,detections\n";
  for (const CategoryRow& row : table.rows) {
    out += fmt::format("{},{}", row.id, csv_field(row.name));
    for (double v : row.ap) out += fmt::format(",{}", v);
    out += fmt::format(",{},{}\n", row.ground_truths, row.detections);
  }
  return out;
}

std::string category_table_markdown(const CategoryTable& table, const std::string& extra_lines) {
  std::string out = fmt::format("# COCO {} evaluation per category\n\n", iou_type_name(table.iou_type));
  out +=
      "Average precision at maxDets=100 as pycocotools' summary computes it, restricted to each\n"
      "category (n/a: no ground truth to find); categories sorted by AP.\n\n";
  out += "| id | category |";
  for (const char* name : kPrecisionStatistics) out += fmt::format(" {} |", name);
  out += " ground truths | detections |\n|---:|---|";
  for (size_t s = 0; s < kPrecisionStatistics.size(); ++s) out += "---:|";
  out += "---:|---:|\n";
  out += markdown_row("", "**" + table.all.name + "**", table.all);
  for (const CategoryRow& row : rows_by_ap(table))
    out += markdown_row(std::to_string(row.id), markdown_cell(row.name), row);
  if (!extra_lines.empty()) out += "\n" + extra_lines;
  return out;
}

}  // namespace dtrain::vision
