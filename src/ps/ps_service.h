#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/server.h>

#include "concurrency/mutex.h"
#include "ps/parameter_server.grpc.pb.h"
#include "ps/parameter_store.h"

namespace dtrain::ps {

// The metadata key every worker request carries the job token under.
inline constexpr const char* kTokenMetadata = "x-dtrain-token";
// The parameter-server protocol (parameter_server.proto) this build speaks, exchanged in
// Register: a worker and a server of different dtrain builds are refused there, naming both
// versions, before any tensor travels. Raised with any change to the messages' meaning.
inline constexpr int kProtocolVersion = 1;

// Serves one ParameterStore over gRPC (callback API: a request waiting for a sync round or
// the staleness bound holds no thread). Requests without the job's token are refused
// with UNAUTHENTICATED.
class ParameterService final : public wire::ParameterServer::CallbackService {
 public:
  ParameterService(ParameterStore& store, std::string token) : store_(store), token_(std::move(token)) {}

  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context, const wire::RegisterRequest* request,
                                     wire::RegisterReply* reply) override;
  grpc::ServerUnaryReactor* Push(grpc::CallbackServerContext* context, const wire::PushRequest* request,
                                 wire::PushReply* reply) override;
  grpc::ServerUnaryReactor* Pull(grpc::CallbackServerContext* context, const wire::PullRequest* request,
                                 wire::PullReply* reply) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* context, const wire::HeartbeatRequest* request,
                                      wire::HeartbeatReply* reply) override;

 private:
  bool authorized(grpc::CallbackServerContext* context) const;

  ParameterStore& store_;
  std::string token_;
};

// A parameter server listening on a port, with the thread that drops silent workers.
class ParameterServer {
 public:
  // `listen`: "host:port"; port 0 picks a free one.
  ParameterServer(ParameterStoreOptions options, std::string token, const std::string& listen);
  ~ParameterServer();
  ParameterServer(const ParameterServer&) = delete;
  ParameterServer& operator=(const ParameterServer&) = delete;

  int port() const { return port_; }
  void shutdown();

 private:
  ParameterStore store_;
  ParameterService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  concurrency::Mutex mutex_;
  concurrency::ConditionVariable stop_;
  bool stopping_ DTRAIN_GUARDED_BY(mutex_) = false;
  std::thread liveness_;
};

}  // namespace dtrain::ps
