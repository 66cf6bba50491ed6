#include "apps/maskrcnn/model_export.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace dtrain::maskrcnn {
namespace {

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path.string() + ": cannot write file: " + std::strerror(errno));
}

}  // namespace

void write_model_metadata(const std::filesystem::path& model_dir, const std::string& weights_file,
                          const vision::config::Config& config, const std::vector<vision::CocoCategory>& categories) {
  write_text(model_dir / "config.yaml", config.dump());
  nlohmann::ordered_json meta;
  meta["kind"] = "maskrcnn";
  meta["weights"] = weights_file;
  meta["config"] = "config.yaml";
  meta["categories"] = nlohmann::ordered_json::array();
  for (const vision::CocoCategory& category : categories) {
    meta["categories"].push_back({{"id", category.id}, {"name", category.name}});
  }
  write_text(model_dir / "model.json", meta.dump(2) + "\n");
}

}  // namespace dtrain::maskrcnn
