// A world numbered outside dtrain (dtrain::init(ExternalWorld), torch.distributed's): what the
// runtime takes from it, what it refuses, and the rendezvous store rank 0 serves for it.
#include <gtest/gtest.h>

#include <string>

#include "dtrain/dtrain.h"
#include "runtime/environment.h"
#include "runtime/external_world.h"

namespace dtrain::runtime {
namespace {

ExternalWorld two_ranks() {
  ExternalWorld world;
  world.rank = 1;
  world.size = 2;
  world.rendezvous_host = "127.0.0.1";
  world.rendezvous_port = 40000;
  world.token = "secret";
  world.timeout_s = 7.5;
  return world;
}

std::string refusal(const ExternalWorld& world) {
  RuntimeConfig config;
  try {
    adopt_external_world(config, world, false);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExternalWorld, ReplacesTheLaunchersWorldAndTakesItsTimeout) {
  RuntimeConfig config;
  config.launched_by_slurm = true;  // e.g. torchrun inside a Slurm step: PyTorch's world wins
  config.rendezvous_in_step = true;
  config.elastic_worker = 3;
  config.stall_shutdown_s = 0;
  adopt_external_world(config, two_ranks(), false);
  EXPECT_EQ(config.rank, 1);
  EXPECT_EQ(config.size, 2);
  EXPECT_FALSE(config.launched_by_slurm);
  EXPECT_FALSE(config.rendezvous_in_step);
  EXPECT_EQ(config.elastic_worker, -1);
  EXPECT_EQ(config.rendezvous_addr, "127.0.0.1");
  EXPECT_EQ(config.rendezvous_port, 40000);
  EXPECT_EQ(config.job_token, "secret");
  EXPECT_EQ(config.timeout.count(), 7500);
  EXPECT_EQ(config.stall_shutdown_s, 7.5);
}

TEST(ExternalWorld, LeavesAStallShutdownTheEnvironmentSet) {
  RuntimeConfig config;
  config.stall_shutdown_s = 42;
  adopt_external_world(config, two_ranks(), true);
  EXPECT_EQ(config.stall_shutdown_s, 42);
}

TEST(ExternalWorld, RefusesWhatIsOutOfRangeNamingIt) {
  ExternalWorld world = two_ranks();
  world.rank = 2;
  EXPECT_NE(refusal(world).find("rank 2 is not in [0, 2)"), std::string::npos) << refusal(world);
  world = two_ranks();
  world.rendezvous_port = 0;
  EXPECT_NE(refusal(world).find("is not a host and port"), std::string::npos) << refusal(world);
  world = two_ranks();
  world.token.clear();
  EXPECT_NE(refusal(world).find("the token is empty"), std::string::npos) << refusal(world);
  world = two_ranks();
  world.timeout_s = 0;
  EXPECT_NE(refusal(world).find("is not a positive duration"), std::string::npos) << refusal(world);
}

TEST(ExternalWorld, AWorldOfOneNeedsNoStore) {
  ExternalWorld world;
  world.timeout_s = 5;
  init(world);
  EXPECT_EQ(rank(), 0);
  EXPECT_EQ(size(), 1);
  shutdown();
}

TEST(ServeRendezvous, OneStorePerProcessOnAnEphemeralPort) {
  const int port = serve_rendezvous("token", 3);
  EXPECT_GT(port, 0);
  EXPECT_EQ(serve_rendezvous("token", 3), port);
  EXPECT_THROW(serve_rendezvous("token", 4), Error);
  EXPECT_THROW(serve_rendezvous("", 3), Error);
}

}  // namespace
}  // namespace dtrain::runtime
