#include "slurm/hostlist.h"

#include <gtest/gtest.h>

namespace dtrain::slurm {
namespace {

using Hosts = std::vector<std::string>;

TEST(Hostlist, PlainNamesAndRangesInSlurmsOrder) {
  EXPECT_EQ(expand_hostlist("node1"), Hosts({"node1"}));
  EXPECT_EQ(expand_hostlist("a,b"), Hosts({"a", "b"}));
  EXPECT_EQ(expand_hostlist("node[1-3,7]"), Hosts({"node1", "node2", "node3", "node7"}));
  EXPECT_EQ(expand_hostlist("gpu[08-10]-a,login"), Hosts({"gpu08-a", "gpu09-a", "gpu10-a", "login"}));
  EXPECT_EQ(expand_hostlist("r[1-2]n[1,3]"), Hosts({"r1n1", "r1n3", "r2n1", "r2n3"}));
  EXPECT_EQ(expand_hostlist("ip-10-0-[1-2]-5"), Hosts({"ip-10-0-1-5", "ip-10-0-2-5"}));
}

TEST(Hostlist, MalformedListsAreErrorsNamingTheList) {
  for (const char* bad : {"node[1-3", "node1-3]", "a,,b", "node[3-1]", "node[x]", "node[[1]]", ""}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const SlurmError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

// Brackets multiply, so a short list can name more hosts than memory holds (found by
// tests/fuzz/slurm_hostlist): refused before the names are made.
TEST(Hostlist, ListsOfMoreThanAMillionHostsAreRefused) {
  EXPECT_EQ(expand_hostlist("n[1-1000]m[1-1000]").size(), 1000000u);
  for (const char* bad : {"a[1-99999]b[1-99999]", "a[1-2]b[1-1000]c[1-1000]",
                          "n[1-100000,1-100000,1-100000,1-100000,"
                          "1-100000,1-100000,1-100000,1-100000,1-100000,1-100000,1-100000]",
                          "n[1-1000]m[1-1000],x"}) {
    try {
      expand_hostlist(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const SlurmError& e) {
      EXPECT_NE(std::string(e.what()).find("more than 1000000 hosts"), std::string::npos) << e.what();
    }
  }
}

TEST(TasksPerNode, RepeatsExpand) {
  EXPECT_EQ(expand_tasks_per_node("2(x3),1"), std::vector<int>({2, 2, 2, 1}));
  EXPECT_EQ(expand_tasks_per_node("4"), std::vector<int>({4}));
  for (const char* bad : {"", "2(x", "0", "2(x0)", "a", "2,,1"}) {
    EXPECT_THROW(expand_tasks_per_node(bad), SlurmError) << bad;
  }
}

}  // namespace
}  // namespace dtrain::slurm
