// A server and workers over real gRPC on loopback, in one process.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include <grpc/grpc.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "ps/ps_client.h"
#include "ps/ps_error.h"
#include "ps/ps_service.h"

namespace dtrain::ps {
namespace {

PsClientOptions client_options(int worker, int workers, int port, std::string token = "secret") {
  PsClientOptions options;
  options.worker = worker;
  options.num_workers = workers;
  options.servers = {"127.0.0.1:" + std::to_string(port)};
  options.token = std::move(token);
  options.rpc_timeout_s = 10;
  return options;
}

ShardPlan one_parameter(std::int64_t elements) { return ShardPlan({{"w", elements}}, 1); }

// Pushes synchronously: waits for the callback.
std::pair<std::string, std::string> push_and_wait(PsClient& client, int piece, std::int64_t step, double lr,
                                                  const std::vector<float>& gradient) {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::string error, value;
  client.push(piece, step, lr, gradient.data(), [&](const std::string& e, std::string&& v) {
    std::lock_guard lock(mutex);
    error = e;
    value = std::move(v);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return done; });
  return {error, value};
}

std::vector<float> floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

TEST(ParameterService, WorkersPushAndPullThroughGrpc) {
  ParameterServer server({}, "secret", "127.0.0.1:0");
  const std::vector<float> initial = {1, 2, 3};
  PsClient chief(client_options(0, 2, server.port()), one_parameter(3));
  PsClient other(client_options(1, 2, server.port()), one_parameter(3));
  // The other worker registers first and waits for the chief's values.
  std::thread late([&] { EXPECT_EQ(other.register_worker({}, nullptr, 0).start_step, 7); });
  const auto registration = chief.register_worker(
      {}, [&](const Piece&) { return initial.data(); }, 7);
  late.join();
  EXPECT_EQ(registration.mode, "async");
  EXPECT_EQ(floats(other.pull({0})[0]), initial);

  auto [error, value] = push_and_wait(other, 0, 0, 0.5, {2, 2, 2});
  ASSERT_EQ(error, "");
  EXPECT_EQ(floats(value), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(floats(chief.pull({0})[0]), (std::vector<float>{0, 1, 2}));

  other.leave();
  chief.wait_for_other_workers(5);  // returns: the other worker has left
}

TEST(ParameterService, RequestsWithoutTheJobTokenAreRefused) {
  ParameterServer server({}, "secret", "127.0.0.1:0");
  PsClient intruder(client_options(0, 1, server.port(), "guess"), one_parameter(1));
  const float value = 0;
  try {
    intruder.register_worker(
        {}, [&](const Piece&) { return &value; }, 0);
    FAIL() << "registered without the token";
  } catch (const PsError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unauthenticated"), std::string::npos) << message;
    EXPECT_NE(message.find("parameter server 0 (127.0.0.1:"), std::string::npos) << message;
  }
}

// A worker of another dtrain build (here: one that sends the next version, or none at all, as
// builds before versions did) is refused at Register, naming both versions.
TEST(ParameterService, AWorkerOfAnotherProtocolVersionIsRefusedNamingBoth) {
  ParameterServer server({}, "secret", "127.0.0.1:0");
  auto stub = wire::ParameterServer::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  for (const int version : {kProtocolVersion + 1, 0}) {
    grpc::ClientContext context;
    context.AddMetadata(kTokenMetadata, "secret");
    wire::RegisterRequest request;
    request.set_worker(3);
    request.set_num_workers(4);
    request.mutable_optimizer()->set_kind("sgd");
    if (version != 0) request.set_protocol_version(version);
    wire::RegisterReply reply;
    const grpc::Status status = stub->Register(&context, request, &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(status.error_message(), "worker 3 speaks parameter-server protocol version " + std::to_string(version) +
                                          ", this server version " + std::to_string(kProtocolVersion) +
                                          " (the worker and the server come from different dtrain builds)");
  }
}

TEST(ParameterService, AServerThatIsGoneIsNamedInTheWorkersError) {
  auto server = std::make_unique<ParameterServer>(ParameterStoreOptions{}, "secret", "127.0.0.1:0");
  PsClientOptions options = client_options(0, 1, server->port());
  options.rpc_timeout_s = 3;
  PsClient chief(options, one_parameter(2));
  const std::vector<float> initial = {0, 0};
  chief.register_worker(
      {}, [&](const Piece&) { return initial.data(); }, 0);
  server.reset();
  auto [error, value] = push_and_wait(chief, 0, 0, 0.1, {1, 1});
  EXPECT_NE(error.find("pushing 'w#0' to parameter server 0 (127.0.0.1:"), std::string::npos) << error;
}

TEST(ParameterService, GrpcIsNotTornDownAfterTheLastClientAndServerSoItsCleanupCannotRaceTheExit) {
  // The last push completes on one of gRPC's threads, which may drop gRPC's last user there:
  // gRPC would then free its globals from a detached thread while main returns (a double free
  // at exit). Held until the exit, gRPC is still up when everything of dtrain's is gone.
  {
    ParameterServer server({}, "secret", "127.0.0.1:0");
    PsClient chief(client_options(0, 1, server.port()), one_parameter(2));
    const std::vector<float> initial = {0, 0};
    chief.register_worker(
        {}, [&](const Piece&) { return initial.data(); }, 0);
    EXPECT_EQ(push_and_wait(chief, 0, 0, 0.1, {1, 1}).first, "");
  }
  EXPECT_TRUE(grpc_is_initialized());
}

}  // namespace
}  // namespace dtrain::ps
