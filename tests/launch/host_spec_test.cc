#include "launch/host_spec.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "launch/launch_error.h"
#include "tests/support/temp_dir.h"

namespace dtrain::launch {
namespace {

std::string usage_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.kind(), LaunchError::Kind::kUsage) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  ADD_FAILURE() << "expected a LaunchError";
  return "";
}

TEST(HostList, ParsesHostsAndSlotsInOrder) {
  auto hosts = parse_host_list("a:2,b:3,c");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0], (HostSlots{"a", 2}));
  EXPECT_EQ(hosts[1], (HostSlots{"b", 3}));
  EXPECT_EQ(hosts[2], (HostSlots{"c", 1}));
  EXPECT_EQ(total_slots(hosts), 6);
  EXPECT_EQ(describe_hosts(hosts), "a:2,b:3,c:1");
}

TEST(HostList, AcceptsAddressesAndSpacesAroundEntries) {
  auto hosts = parse_host_list(" 10.0.0.1:4 , node-2.example.com:8");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostSlots{"10.0.0.1", 4}));
  EXPECT_EQ(hosts[1], (HostSlots{"node-2.example.com", 8}));
}

TEST(HostList, RejectsMalformedEntries) {
  for (const char* bad :
       {"a:", "a:0", "a:x", "a:-1", "a:2x", "", " ", ":2", "a:2,,b:1", "a:2,", "a:1:2", "-a:1", "a:99999999999"}) {
    std::string message = usage_message([&] { parse_host_list(bad); });
    EXPECT_TRUE(message.starts_with("-H: ")) << bad << " -> " << message;
  }
}

TEST(HostList, ErrorNamesTheBadEntry) {
  EXPECT_NE(usage_message([] { parse_host_list("good:1,bad:x"); }).find("bad:x"), std::string::npos);
  EXPECT_NE(usage_message([] { parse_host_list("a:1,a:2"); }).find("'a'"), std::string::npos);
}

TEST(Hostfile, ParsesSlotsCommentsAndBlankLines) {
  auto hosts = parse_hostfile_text(
      "# cluster\n"
      "\n"
      "node1 slots=4\n"
      "   node2    slots=2   # trailing comment\n"
      "node3\n"
      "\t\n"
      "node4 slots=1",
      "hosts.txt");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0], (HostSlots{"node1", 4}));
  EXPECT_EQ(hosts[1], (HostSlots{"node2", 2}));
  EXPECT_EQ(hosts[2], (HostSlots{"node3", 1}));
  EXPECT_EQ(hosts[3], (HostSlots{"node4", 1}));
}

TEST(Hostfile, AcceptsWindowsLineEndings) {
  auto hosts = parse_hostfile_text("a slots=2\r\nb\r\n", "f");
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostSlots{"a", 2}));
}

TEST(Hostfile, ErrorsNameFileAndLine) {
  struct Case {
    const char* text;
    int line;
  };
  for (Case c : {Case{"a slots=2\nb slots=x\n", 2}, Case{"# c\n\na slots=0\n", 3}, Case{"a slots=2 extra\n", 1},
                 Case{"a\nb\nc maxslots=3\n", 3}, Case{"a slots=\n", 1}, Case{"a:2\n", 1}}) {
    std::string message = usage_message([&] { parse_hostfile_text(c.text, "my.hosts"); });
    EXPECT_NE(message.find("hostfile my.hosts line " + std::to_string(c.line) + ":"), std::string::npos)
        << c.text << " -> " << message;
  }
}

TEST(Hostfile, RejectsEmptyFileAndDuplicates) {
  EXPECT_NE(usage_message([] { parse_hostfile_text("# nothing\n\n", "f"); }).find("no hosts"), std::string::npos);
  EXPECT_NE(usage_message([] { parse_hostfile_text("a\na slots=2\n", "f"); }).find("'a'"), std::string::npos);
}

TEST(Hostfile, ReadsFromDiskAndReportsMissingFile) {
  const dtrain::testing::TempDir dir;
  const std::string path = dir / "hostfile";
  {
    std::ofstream out(path);
    out << "x slots=3\ny slots=1\n";
  }
  auto hosts = read_hostfile(path);
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0], (HostSlots{"x", 3}));
  std::remove(path.c_str());

  std::string message = usage_message([&] { read_hostfile(path); });
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("No such file"), std::string::npos) << message;
}

}  // namespace
}  // namespace dtrain::launch
