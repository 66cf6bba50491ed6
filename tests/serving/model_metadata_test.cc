// model.json as the trainers write it, and the one-line errors for models a
// server cannot use.
#include "serving/model_metadata.h"

#include <gtest/gtest.h>

#include "serving/model_error.h"
#include "tests/support/temp_dir.h"

namespace dtrain::serving {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;

std::string error_of(const fs::path& directory) {
  try {
    read_model_metadata(directory);
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelMetadata, ReadsTheMnistTrainersFile) {
  TempDir dir;
  write_text(dir.path() / "model.pt", "weights");
  // Exactly what dtrain-mnist writes.
  write_text(dir.path() / "model.json",
             "{\"kind\": \"mnist\", \"weights\": \"model.pt\", \"input\": [1, 28, 28], \"classes\": 10, "
             "\"test_accuracy\": 0.9812}\n");
  const ModelMetadata meta = read_model_metadata(dir.path());
  EXPECT_EQ(meta.kind, ModelKind::kMnist);
  EXPECT_EQ(meta.weights, dir.path() / "model.pt");
  ASSERT_TRUE(meta.test_accuracy.has_value());
  EXPECT_DOUBLE_EQ(*meta.test_accuracy, 0.9812);
}

TEST(ModelMetadata, ReadsMaskRcnnCategoriesInLabelOrder) {
  TempDir dir;
  write_text(dir.path() / "model_final.pth", "w");
  write_text(dir.path() / "config.yaml", "MODEL: {}");
  write_text(dir.path() / "model.json",
             R"({"kind": "maskrcnn", "weights": "model_final.pth", "config": "config.yaml",
                 "categories": [{"id": 1, "name": "square"}, {"id": 7, "name": "circle"}]})");
  const ModelMetadata meta = read_model_metadata(dir.path());
  EXPECT_EQ(meta.kind, ModelKind::kMaskRcnn);
  EXPECT_EQ(meta.config, dir.path() / "config.yaml");
  ASSERT_EQ(meta.categories.size(), 2u);
  EXPECT_EQ(meta.categories[1].id, 7);
  EXPECT_EQ(meta.categories[1].name, "circle");
}

TEST(ModelMetadata, ErrorsNameTheFileAndField) {
  TempDir dir;
  const std::string file = (dir.path() / "model.json").string();
  EXPECT_EQ(error_of(dir.path()),
            file + ": missing: not a model written by a dtrain trainer (dtrain-mnist, dtrain-maskrcnn train)");
  write_text(file, "{not json");
  EXPECT_NE(error_of(dir.path()).find(file + ": not JSON"), std::string::npos);
  write_text(file, R"({"kind": "resnet", "weights": "w"})");
  EXPECT_EQ(error_of(dir.path()), file + ": \"kind\" must be \"mnist\" or \"maskrcnn\", got \"resnet\"");
  write_text(file, R"({"kind": "mnist"})");
  EXPECT_EQ(error_of(dir.path()), file + ": \"weights\" must be a file name");
  write_text(file, R"({"kind": "mnist", "weights": "../../etc/passwd"})");
  EXPECT_EQ(error_of(dir.path()), file + ": \"weights\" ../../etc/passwd must name a file inside the model directory");
  write_text(file, R"({"kind": "mnist", "weights": "model.pt"})");
  EXPECT_EQ(error_of(dir.path()),
            file + ": \"weights\" names " + (dir.path() / "model.pt").string() + ", which does not exist");
  write_text(dir.path() / "w.pth", "w");
  write_text(dir.path() / "c.yaml", "c");
  write_text(file, R"({"kind": "maskrcnn", "weights": "w.pth", "config": "c.yaml", "categories": [{"id": "1"}]})");
  EXPECT_EQ(error_of(dir.path()), file + ": categories[0] must be {\"id\": integer, \"name\": string}");
}

}  // namespace
}  // namespace dtrain::serving
