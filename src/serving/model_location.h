#pragma once

// `dtrain serve --model PATH`: PATH is a model directory (SageMaker unpacks
// model.tar.gz into /opt/ml/model before starting the container) or the
// archive itself, which is then unpacked safely into a private temporary
// directory that lives as long as this object.
#include <filesystem>
#include <string>

#include "serving/model_archive.h"

namespace dtrain::serving {

class ModelLocation {
 public:
  // Throws ModelError: PATH missing, neither a directory nor a readable
  // archive, or an archive refused by unpack_model_archive.
  explicit ModelLocation(const std::string& path, const ArchiveLimits& limits = {});
  ~ModelLocation();
  ModelLocation(const ModelLocation&) = delete;
  ModelLocation& operator=(const ModelLocation&) = delete;

  const std::filesystem::path& directory() const { return directory_; }
  bool unpacked() const { return !scratch_.empty(); }

 private:
  std::filesystem::path directory_;
  std::filesystem::path scratch_;  // the temporary directory to remove, if any
};

}  // namespace dtrain::serving
