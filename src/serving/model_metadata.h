#pragma once

// What a trainer writes next to its weights so that a server knows what it
// holds: model.json in the model directory (SM_MODEL_DIR), written by
// dtrain-mnist ({"kind": "mnist", "weights": "model.pt", ...}) and
// dtrain-maskrcnn train ({"kind": "maskrcnn", "weights": "model_final.pth",
// "config": "config.yaml", "categories": [{"id": 1, "name": "square"}, ...]}).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace dtrain::serving {

enum class ModelKind { kMnist, kMaskRcnn };

struct Category {
  int64_t id = 0;
  std::string name;
};

struct ModelMetadata {
  ModelKind kind = ModelKind::kMnist;
  std::filesystem::path directory;
  std::filesystem::path weights;  // inside `directory`, checked to exist
  // Mask R-CNN: the resolved training config (YAML; checked to exist) and the
  // categories in label order: the model's label l is categories[l - 1].
  std::filesystem::path config;
  std::vector<Category> categories;
  // MNIST: the trainer's own accuracy on the 10,000 test images, when written.
  std::optional<double> test_accuracy;
};

const char* kind_name(ModelKind kind);

// Reads `directory`/model.json. Throws ModelError naming the file and the
// field: missing file or field, unknown kind, a file name that leaves the
// directory, a weights or config file that does not exist.
ModelMetadata read_model_metadata(const std::filesystem::path& directory);

}  // namespace dtrain::serving
