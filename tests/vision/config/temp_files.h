#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace dtrain::vision::config::testing {

// A fresh directory under the system's temp dir for YAML files, removed
// with its contents.
class TempFiles {
 public:
  TempFiles() {
    static std::atomic<int> counter{0};
    root_ = std::filesystem::temp_directory_path() /
            ("dtrain-vision-config-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  ~TempFiles() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  TempFiles(const TempFiles&) = delete;
  TempFiles& operator=(const TempFiles&) = delete;

  // Writes `text` to root/name (creating folders) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path path = root_ / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }
  std::string path(const std::string& name) const { return (root_ / name).string(); }

 private:
  std::filesystem::path root_;
};

}  // namespace dtrain::vision::config::testing
