// What a request may read from a job directory: files inside it, nothing through "..",
// absolute paths or symbolic links.
#include "dashboard/safe_path.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace dtrain::dashboard {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;

class SafePath : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(dir.path() / "job/logs/algo-1.log", "line\n");
    write_text(dir.path() / "job/metrics.jsonl", "{}\n");
    write_text(dir.path() / "secret.txt", "outside\n");
    fs::create_symlink(dir.path() / "secret.txt", dir.path() / "job/link.txt");
    fs::create_directory_symlink(dir.path(), dir.path() / "job/up");
  }
  std::string job() const { return (dir.path() / "job").string(); }
  TempDir dir;
};

TEST_F(SafePath, FilesInsideTheDirectoryAreAllowed) {
  EXPECT_EQ(resolve_file_inside(job(), "metrics.jsonl").status, 200);
  const ResolvedPath log = resolve_file_inside(job(), "logs/algo-1.log");
  EXPECT_EQ(log.status, 200);
  EXPECT_EQ(log.path, job() + "/logs/algo-1.log");
}

TEST_F(SafePath, TraversalAndOddPathsAreRefusedWithAReason) {
  for (const char* path : {"../secret.txt", "logs/../../secret.txt", "/etc/passwd", "", "logs//algo-1.log",
                           "./metrics.jsonl", "logs/..", "logs\\..\\..\\secret.txt"}) {
    const ResolvedPath r = resolve_file_inside(job(), path);
    EXPECT_EQ(r.status, 400) << path;
    EXPECT_TRUE(r.path.empty()) << path;
    EXPECT_FALSE(r.error.empty()) << path;
  }
  EXPECT_EQ(resolve_file_inside(job(), std::string("metrics.jsonl\0x", 15)).status, 400);
}

TEST_F(SafePath, SymbolicLinksAreNotFollowed) {
  EXPECT_EQ(resolve_file_inside(job(), "link.txt").status, 400);
  EXPECT_EQ(resolve_file_inside(job(), "up/secret.txt").status, 400);
}

TEST_F(SafePath, MissingFilesAndDirectoriesAreNotFound) {
  EXPECT_EQ(resolve_file_inside(job(), "nothing.json").status, 404);
  EXPECT_EQ(resolve_file_inside(job(), "logs").status, 404);
  EXPECT_EQ(resolve_file_inside(job(), "metrics.jsonl/x").status, 404);
  // An encoded traversal reaches here decoded once; what is left is a name, not a step up.
  EXPECT_EQ(resolve_file_inside(job(), "%2e%2e/secret.txt").status, 404);
}

}  // namespace
}  // namespace dtrain::dashboard
