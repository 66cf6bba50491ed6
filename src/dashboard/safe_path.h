// Which file a request may read: a path relative to a directory the dashboard serves, taken
// apart component by component. Refused: absolute paths, empty, "." and ".." components,
// backslashes and NULs, and a symbolic link anywhere on the way (a link inside a job directory
// could point anywhere). The check is made on the file system as it is at the moment of the
// request; the directory itself (a job directory under --jobs) is trusted.
#pragma once

#include <string>
#include <string_view>

namespace dtrain::dashboard {

struct ResolvedPath {
  std::string path;   // root + "/" + relative, when allowed
  std::string error;  // why not, else empty
  int status = 200;   // 400 for a refused path, 404 when nothing is there, 200 when allowed
};

// A regular file under `root`, reached through directories only.
ResolvedPath resolve_file_inside(const std::string& root, std::string_view relative);

}  // namespace dtrain::dashboard
