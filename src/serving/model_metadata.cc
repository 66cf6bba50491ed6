#include "serving/model_metadata.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "serving/model_error.h"

namespace dtrain::serving {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A file named by the metadata: a plain name or relative path that stays in
// the directory and exists.
fs::path file_in_directory(const fs::path& directory, const json& meta, const std::string& field,
                           const std::string& context) {
  if (!meta.contains(field) || !meta[field].is_string() || meta[field].get<std::string>().empty()) {
    throw ModelError(context + ": \"" + field + "\" must be a file name");
  }
  const fs::path name = meta[field].get<std::string>();
  if (name.is_absolute() || name.lexically_normal().string().starts_with("..")) {
    throw ModelError(context + ": \"" + field + "\" " + name.string() + " must name a file inside the model directory");
  }
  const fs::path path = directory / name;
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    throw ModelError(context + ": \"" + field + "\" names " + path.string() + ", which does not exist");
  }
  return path;
}

}  // namespace

const char* kind_name(ModelKind kind) { return kind == ModelKind::kMnist ? "mnist" : "maskrcnn"; }

ModelMetadata read_model_metadata(const fs::path& directory) {
  const fs::path file = directory / "model.json";
  const std::string context = file.string();
  std::ifstream in(file);
  if (!in) {
    throw ModelError(context +
                     ": missing: not a model written by a dtrain trainer (dtrain-mnist, dtrain-maskrcnn train)");
  }
  std::stringstream text;
  text << in.rdbuf();
  json meta;
  try {
    meta = json::parse(text.str());
  } catch (const json::exception& e) {
    throw ModelError(context + ": not JSON: " + e.what());
  }
  if (!meta.is_object()) throw ModelError(context + ": must be a JSON object");
  ModelMetadata out;
  out.directory = directory;
  const std::string kind = meta.value("kind", std::string());
  if (kind == "mnist") {
    out.kind = ModelKind::kMnist;
  } else if (kind == "maskrcnn") {
    out.kind = ModelKind::kMaskRcnn;
  } else {
    throw ModelError(context + ": \"kind\" must be \"mnist\" or \"maskrcnn\", got " +
                     (meta.contains("kind") ? meta["kind"].dump() : std::string("nothing")));
  }
  out.weights = file_in_directory(directory, meta, "weights", context);
  if (meta.contains("test_accuracy") && meta["test_accuracy"].is_number()) {
    out.test_accuracy = meta["test_accuracy"].get<double>();
  }
  if (out.kind == ModelKind::kMaskRcnn) {
    out.config = file_in_directory(directory, meta, "config", context);
    if (!meta.contains("categories") || !meta["categories"].is_array() || meta["categories"].empty()) {
      throw ModelError(context + ": \"categories\" must list the training set's categories");
    }
    for (size_t i = 0; i < meta["categories"].size(); ++i) {
      const json& entry = meta["categories"][i];
      if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() || !entry.contains("name") ||
          !entry["name"].is_string()) {
        throw ModelError(context + ": categories[" + std::to_string(i) +
                         "] must be {\"id\": integer, \"name\": string}");
      }
      out.categories.push_back({entry["id"].get<int64_t>(), entry["name"].get<std::string>()});
    }
  }
  return out;
}

}  // namespace dtrain::serving
