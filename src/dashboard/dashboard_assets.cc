#include "dashboard/dashboard_assets.h"

namespace dtrain::dashboard {
namespace {

const char* content_type_of(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  return "application/octet-stream";
}

}  // namespace

std::optional<Asset> find_asset(std::string_view name) {
  for (size_t i = 0; i < kEmbeddedFileCount; ++i) {
    if (kEmbeddedFiles[i].name == name) return Asset{kEmbeddedFiles[i].bytes, content_type_of(name)};
  }
  return std::nullopt;
}

}  // namespace dtrain::dashboard
