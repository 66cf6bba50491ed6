#pragma once

#include <string>

#include "vision/report/category_table.h"

namespace dtrain::vision {

// The per-category table as CSV (RFC 4180): a header `id,name,AP,AP50,AP75,
// APs,APm,APl,ground_truths,detections`, then one row per category in
// evaluation order (ascending id), the statistics at full precision
// (shortest round trip) and -1 where pycocotools has -1. No "all" row.
std::string category_table_csv(const CategoryTable& table);

// The per-category table as a Markdown document for people: a title naming
// the IoU type, the "all categories" row (the summary's statistics), then the
// categories sorted by AP, best first; three decimals as pycocotools prints
// them, "n/a" for -1. `extra_lines` (e.g. an error breakdown) go below it.
std::string category_table_markdown(const CategoryTable& table, const std::string& extra_lines = "");

}  // namespace dtrain::vision
