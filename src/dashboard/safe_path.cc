#include "dashboard/safe_path.h"

#include <sys/stat.h>

#include <vector>

namespace dtrain::dashboard {
namespace {

ResolvedPath refused(std::string why) { return {"", std::move(why), 400}; }

}  // namespace

ResolvedPath resolve_file_inside(const std::string& root, std::string_view relative) {
  if (relative.empty()) return refused("an empty path");
  if (relative.front() == '/') return refused("an absolute path");
  if (relative.find('\0') != std::string_view::npos || relative.find('\\') != std::string_view::npos) {
    return refused("a path with a NUL or a backslash");
  }
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= relative.size();) {
    size_t slash = relative.find('/', start);
    if (slash == std::string_view::npos) slash = relative.size();
    std::string_view part = relative.substr(start, slash - start);
    if (part.empty() || part == "." || part == "..") return refused("a path with an empty, '.' or '..' component");
    parts.push_back(part);
    start = slash + 1;
  }
  std::string path = root;
  for (size_t i = 0; i < parts.size(); ++i) {
    path += "/";
    path += parts[i];
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return {"", "no such file", 404};
    if (S_ISLNK(st.st_mode)) return refused("a path through a symbolic link");
    const bool last = i + 1 == parts.size();
    if (!last && !S_ISDIR(st.st_mode)) return {"", "no such file", 404};
    if (last && !S_ISREG(st.st_mode)) return {"", "not a file", 404};
  }
  return {path, "", 200};
}

}  // namespace dtrain::dashboard
