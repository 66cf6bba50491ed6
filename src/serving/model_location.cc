#include "serving/model_location.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>

#include "serving/model_error.h"

namespace dtrain::serving {

namespace fs = std::filesystem;

ModelLocation::ModelLocation(const std::string& path, const ArchiveLimits& limits) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) throw ModelError(path + ": no such file or directory");
  if (fs::is_directory(status)) {
    directory_ = path;
    return;
  }
  if (!fs::is_regular_file(status)) throw ModelError(path + ": neither a model directory nor a model.tar.gz");
  std::string scratch = (fs::temp_directory_path(error) / "dtrain-serve-model-XXXXXX").string();
  if (!mkdtemp(scratch.data()))
    throw ModelError("cannot create a directory to unpack " + path + ": " + std::strerror(errno));
  scratch_ = scratch;
  try {
    unpack_model_archive(path, scratch, limits);
  } catch (...) {
    fs::remove_all(scratch_, error);
    throw;
  }
  directory_ = scratch_;
}

ModelLocation::~ModelLocation() {
  if (scratch_.empty()) return;
  std::error_code ignored;
  fs::remove_all(scratch_, ignored);
}

}  // namespace dtrain::serving
