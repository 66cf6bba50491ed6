#include "job/artifact_packer.h"

#include <filesystem>

#include <fmt/format.h>

#include "job/job_error.h"
#include "job/system_command.h"

namespace dtrain::job {

namespace fs = std::filesystem;

void pack_directory(const std::string& dir, const std::string& archive) {
  std::error_code ec;
  fs::create_directories(fs::path(archive).parent_path(), ec);
  fs::create_directories(dir, ec);
  run_command_or_throw({"tar", "-czf", archive, "-C", dir, "."}, 600);
}

uint64_t copy_tree(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", to, ec.message()));
  uint64_t bytes = 0;
  if (!fs::is_directory(from, ec)) return 0;
  for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::end(it); it.increment(ec)) {
    fs::path relative = fs::relative(it->path(), from, ec);
    fs::path target = fs::path(to) / relative;
    if (it->is_directory(ec)) {
      fs::create_directories(target, ec);
    } else if (it->is_regular_file(ec)) {
      fs::create_directories(target.parent_path(), ec);
      fs::copy_file(it->path(), target, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        throw JobError::runtime(
            fmt::format("cannot copy {} to {}: {}", it->path().string(), target.string(), ec.message()));
      }
      bytes += it->file_size(ec);
    }
  }
  return bytes;
}

}  // namespace dtrain::job
