#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace dtrain::vision::config::testing {

// YAML files in a fresh temporary directory (tests/support's TempDir), removed with it.
class TempFiles {
 public:
  // Writes `text` to root/name (creating folders) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path path = dir_.path() / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }
  std::string path(const std::string& name) const { return dir_ / name; }

 private:
  dtrain::testing::TempDir dir_;
};

}  // namespace dtrain::vision::config::testing
