#include "launch/host_discovery.h"

#include <gtest/gtest.h>

#include "launch/launch_error.h"

namespace dtrain::launch {
namespace {

TEST(HostDiscovery, ReadsHostsWithAndWithoutSlotsSkippingCommentsAndBlankLines) {
  const auto hosts = parse_discovered_hosts("# spot pool\nnode-1:4\n\n  node-2  \nnode-3:2 # newest\n", "script");
  EXPECT_EQ(hosts, (std::vector<HostSlots>{{"node-1", 4}, {"node-2", 1}, {"node-3", 2}}));
}

TEST(HostDiscovery, ABadLineIsNamed) {
  try {
    parse_discovered_hosts("node-1\nnode-2:zero\n", "--host-discovery-script ./hosts.sh");
    FAIL() << "no error";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("--host-discovery-script ./hosts.sh line 2"), std::string::npos) << e.what();
  }
}

TEST(HostDiscovery, RunsTheScriptAndRefusesOneThatFails) {
  EXPECT_EQ(discover_hosts("printf 'a:2\\nb\\n'"), (std::vector<HostSlots>{{"a", 2}, {"b", 1}}));
  EXPECT_THROW(discover_hosts("exit 3"), LaunchError);
}

}  // namespace
}  // namespace dtrain::launch
