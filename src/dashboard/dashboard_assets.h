// The dashboard's pages, scripts, styles and uPlot, built into the program
// (src/dashboard/web/ and the npm package uplot, embedded by cmake/embed_files.cmake).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace dtrain::dashboard {

struct EmbeddedFile {
  std::string_view name;  // "index.html", "app.js", "uPlot.iife.min.js", ...
  std::string_view bytes;
};

// Defined in the generated dashboard_files.cc.
extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kEmbeddedFileCount;

struct Asset {
  std::string_view bytes;
  const char* content_type;
};

std::optional<Asset> find_asset(std::string_view name);

}  // namespace dtrain::dashboard
