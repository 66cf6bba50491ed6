// What the dashboard reads on a request: the file a request names under a job directory
// (`?file=`: any client on loopback, or one that knows the token elsewhere) and the job's
// timeline, a trace a running job is still appending to. The first byte picks which.
//
// Beyond a clean error, each is held to what the server relies on: an allowed path is a regular
// file that really lies inside the root (no link, no "..", whatever the bytes), and a timeline's
// spans and instants point at tracks and activities that exist, in start order.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "dashboard/safe_path.h"
#include "dashboard/timeline_reader.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

// A job directory of files, a subdirectory and links pointing in and out of it, made once in a
// temporary folder that also holds a file outside the job; removed when the process ends.
class JobDirectory {
 public:
  JobDirectory() {
    char pattern[] = "/tmp/dtrain-fuzz-dashboard-XXXXXX";
    parent_ = ::mkdtemp(pattern);
    root_ = parent_ + "/job";
    std::filesystem::create_directories(root_ + "/logs");
    std::ofstream(root_ + "/metrics.jsonl") << "{}\n";
    std::ofstream(root_ + "/logs/rank.0.log") << "x\n";
    std::ofstream(parent_ + "/outside") << "secret\n";
    std::filesystem::create_directory_symlink("/etc", root_ + "/etc");
    std::filesystem::create_symlink("../metrics.jsonl", root_ + "/logs/metrics");
    std::filesystem::create_symlink("../../outside", root_ + "/logs/outside");
  }
  ~JobDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(parent_, ignored);
  }
  const std::string& root() const { return root_; }

 private:
  std::string parent_, root_;
};

const std::string& job_directory() {
  static const JobDirectory directory;
  return directory.root();
}

void check_path(std::string_view relative) {
  const std::string& root = job_directory();
  const dtrain::dashboard::ResolvedPath resolved = dtrain::dashboard::resolve_file_inside(root, relative);
  if (resolved.status != 200) {
    if (resolved.error.empty() || !resolved.path.empty()) __builtin_trap();
    return;
  }
  // Allowed: the root joined with the bytes as given, a regular file, inside the root.
  if (resolved.path != root + "/" + std::string(relative)) __builtin_trap();
  struct stat st {};
  if (::lstat(resolved.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) __builtin_trap();
  char* real = ::realpath(resolved.path.c_str(), nullptr);
  char* real_root = ::realpath(root.c_str(), nullptr);
  const bool inside = real && real_root && std::string(real).rfind(std::string(real_root) + "/", 0) == 0;
  ::free(real);
  ::free(real_root);
  if (!inside) __builtin_trap();
}

void check_timeline(const std::string& text) {
  const dtrain::dashboard::Timeline timeline = dtrain::dashboard::parse_timeline(text);
  const auto tracks = static_cast<int>(timeline.tracks.size());
  const auto activities = static_cast<int>(timeline.activities.size());
  std::int64_t previous_start = INT64_MIN;
  for (const dtrain::dashboard::TimelineSpan& span : timeline.spans) {
    if (span.track < 0 || span.track >= tracks || span.activity < 0 || span.activity >= activities) __builtin_trap();
    if (span.duration_us < 0 || span.start_us < previous_start) __builtin_trap();
    previous_start = span.start_us;
  }
  for (const dtrain::dashboard::TimelineInstant& instant : timeline.instants) {
    if (instant.track < 0 || instant.track >= tracks) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest = dtrain::fuzz::as_text(data + 1, size - 1);
  dtrain::fuzz::expect_clean_errors([&] {
    if (data[0] % 2 == 0) {
      check_path(rest);
    } else {
      check_timeline(std::string(rest));
    }
  });
  return 0;
}
