#pragma once

#include <string>
#include <string_view>

namespace dtrain::launch {

// --output-filename: the exact bytes a rank wrote, unprefixed, in
// DIR/rank.N/stdout and DIR/rank.N/stderr.
class RawOutputFiles {
 public:
  // Creates the directory and truncates both files; throws LaunchError
  // (runtime) naming the path when that fails.
  RawOutputFiles(const std::string& dir, int rank);
  ~RawOutputFiles();
  RawOutputFiles(const RawOutputFiles&) = delete;
  RawOutputFiles& operator=(const RawOutputFiles&) = delete;

  void write_stdout(std::string_view bytes) { write_all(stdout_fd_, bytes); }
  void write_stderr(std::string_view bytes) { write_all(stderr_fd_, bytes); }

 private:
  static void write_all(int fd, std::string_view bytes);

  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

}  // namespace dtrain::launch
