#pragma once

#include <ftw.h>
#include <unistd.h>

#include <cstdio>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

namespace dtrain::testing {

// Removes `path` and everything under it, deepest first, without following links. POSIX's
// walk rather than std::filesystem::remove_all, which crashed in the GPU machine's build
// (LibTorch 2.11 beside a newer libstdc++; docs/gpu.md) where these tests run too.
inline void remove_tree(const std::filesystem::path& path) {
  const auto remove_one = [](const char* entry, const struct stat*, int, struct FTW*) {
    std::remove(entry);
    return 0;  // go on past what cannot be removed
  };
  nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

// A fresh directory under the system's temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("dtrain-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    remove_tree(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path` (typically inside a TempDir), creating its parent directories.
inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace dtrain::testing
