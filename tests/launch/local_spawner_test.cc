#include "launch/local_spawner.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cerrno>

#include "tests/launch/child_runner.h"

namespace dtrain::launch {
namespace {

using testing::ChildRunner;

TEST(LocalSpawner, ReportsExecFailure) {
  ChildRunner child({"dtrain-no-such-program-xyz"});
  EXPECT_EQ(child.exec_errno(), ENOENT);
  auto result = child.finish(5);
  EXPECT_EQ(result.exit_code, 127);
}

TEST(LocalSpawner, SeparatesStreamsAndSetsEnvironment) {
  ChildRunner child({"sh", "-c", "echo out $SPAWN_TEST; echo err >&2"}, {"SPAWN_TEST=42"});
  EXPECT_EQ(child.exec_errno(), 0);
  auto result = child.finish(5);
  EXPECT_EQ(result.out, "out 42\n");
  EXPECT_EQ(result.err, "err\n");
}

TEST(LocalSpawner, ChildLeadsItsOwnProcessGroupWithStdinFromDevNull) {
  ChildRunner child({"sh", "-c", "ps -o pgid= -p $$; ps -o pid= -p $$; cat; echo done"});
  auto result = child.finish(5);
  auto lines = testing::lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out << result.err;
  EXPECT_EQ(std::stol(lines[0]), std::stol(lines[1]));
  EXPECT_EQ(std::stol(lines[0]), child.pid());
  EXPECT_NE(std::stol(lines[0]), static_cast<long>(::getpgrp()));
  EXPECT_EQ(lines[2], "done");  // cat saw EOF at once
}

}  // namespace
}  // namespace dtrain::launch
