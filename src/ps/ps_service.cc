#include "ps/ps_service.h"

#include <climits>
#include <cstring>

#include <fmt/format.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "ps/grpc_lifetime.h"
#include "ps/ps_error.h"

namespace dtrain::ps {
namespace {

grpc::Status unauthenticated() {
  return {grpc::StatusCode::UNAUTHENTICATED, "parameter server: bad or missing job token (DTRAIN_JOB_TOKEN)"};
}

// Compares without stopping at the first difference.
bool same_token(std::string_view given, std::string_view expected) {
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < given.size() && i < expected.size(); ++i) diff |= given[i] ^ expected[i];
  return diff == 0;
}

UpdateRuleSpec rule_of(const wire::OptimizerSpec& spec) {
  UpdateRuleSpec rule;
  rule.kind = spec.kind() == "adam" ? UpdateRuleSpec::Kind::kAdam : UpdateRuleSpec::Kind::kSgd;
  rule.momentum = spec.momentum();
  rule.dampening = spec.dampening();
  rule.nesterov = spec.nesterov();
  rule.weight_decay = spec.weight_decay();
  rule.beta1 = spec.beta1();
  rule.beta2 = spec.beta2();
  rule.eps = spec.eps();
  return rule;
}

}  // namespace

bool ParameterService::authorized(grpc::CallbackServerContext* context) const {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find(kTokenMetadata);
  if (it == metadata.end()) return false;
  return same_token(std::string_view(it->second.data(), it->second.size()), token_);
}

grpc::ServerUnaryReactor* ParameterService::Register(grpc::CallbackServerContext* context,
                                                     const wire::RegisterRequest* request, wire::RegisterReply* reply) {
  auto* reactor = context->DefaultReactor();
  if (!authorized(context)) {
    reactor->Finish(unauthenticated());
    return reactor;
  }
  reply->set_protocol_version(kProtocolVersion);
  if (request->protocol_version() != kProtocolVersion) {
    reactor->Finish({grpc::StatusCode::FAILED_PRECONDITION,
                     fmt::format("worker {} speaks parameter-server protocol version {}, this server version {} (the "
                                 "worker and the server come from different dtrain builds)",
                                 request->worker(), request->protocol_version(), kProtocolVersion)});
    return reactor;
  }
  if (request->optimizer().kind() != "sgd" && request->optimizer().kind() != "adam") {
    reactor->Finish(
        {grpc::StatusCode::INVALID_ARGUMENT,
         fmt::format("optimizer '{}' is not one a parameter server runs (sgd, adam)", request->optimizer().kind())});
    return reactor;
  }
  std::vector<PieceDeclaration> pieces;
  for (const auto& p : request->pieces()) pieces.push_back({p.name(), p.elements()});
  std::vector<std::string> values(request->initial_values().begin(), request->initial_values().end());
  const ParameterStoreOptions& options = store_.options();
  reply->set_mode(options.mode == UpdateMode::kSync ? "sync" : "async");
  store_.register_worker(request->worker(), request->num_workers(), pieces, rule_of(request->optimizer()), values,
                         request->start_step(), [reactor, reply](const grpc::Status& status, std::int64_t start_step) {
                           reply->set_start_step(start_step);
                           reactor->Finish(status);
                         });
  return reactor;
}

grpc::ServerUnaryReactor* ParameterService::Push(grpc::CallbackServerContext* context, const wire::PushRequest* request,
                                                 wire::PushReply* reply) {
  auto* reactor = context->DefaultReactor();
  if (!authorized(context)) {
    reactor->Finish(unauthenticated());
    return reactor;
  }
  store_.push(request->worker(), request->step(), request->learning_rate(), request->piece(), request->gradient(),
              [reactor, reply](const grpc::Status& status, std::int64_t version, const std::vector<float>& value) {
                if (status.ok()) {
                  reply->set_version(version);
                  reply->set_value(value.data(), value.size() * sizeof(float));
                }
                reactor->Finish(status);
              });
  return reactor;
}

grpc::ServerUnaryReactor* ParameterService::Pull(grpc::CallbackServerContext* context, const wire::PullRequest* request,
                                                 wire::PullReply* reply) {
  auto* reactor = context->DefaultReactor();
  if (!authorized(context)) {
    reactor->Finish(unauthenticated());
    return reactor;
  }
  std::vector<std::string> names(request->pieces().begin(), request->pieces().end());
  std::vector<std::string> values;
  grpc::Status status = store_.pull(request->worker(), names, values);
  if (status.ok()) {
    for (auto& v : values) reply->add_values(std::move(v));
  }
  reactor->Finish(status);
  return reactor;
}

grpc::ServerUnaryReactor* ParameterService::Heartbeat(grpc::CallbackServerContext* context,
                                                      const wire::HeartbeatRequest* request,
                                                      wire::HeartbeatReply* reply) {
  auto* reactor = context->DefaultReactor();
  if (!authorized(context)) {
    reactor->Finish(unauthenticated());
    return reactor;
  }
  int live_workers = 0;
  grpc::Status status = store_.heartbeat(request->worker(), request->leaving(), live_workers);
  reply->set_live_workers(live_workers);
  reactor->Finish(status);
  return reactor;
}

ParameterServer::ParameterServer(ParameterStoreOptions options, std::string token, const std::string& listen)
    : store_(options), service_(store_, std::move(token)) {
  hold_grpc_until_exit();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port_);
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) {
    throw PsError(fmt::format("parameter server {}: cannot listen on {}", options.server, listen));
  }
  liveness_ = std::thread([this] {
    concurrency::MutexLock lock(mutex_);
    while (
        !stop_.wait_for(lock, std::chrono::milliseconds(500), [this]() DTRAIN_REQUIRES(mutex_) { return stopping_; })) {
      lock.unlock();
      store_.check_liveness();
      lock.lock();
    }
  });
}

void ParameterServer::shutdown() {
  {
    concurrency::MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_.notify_all();
  if (liveness_.joinable()) liveness_.join();
  // Requests still waiting (a sync round that will never complete) end now.
  store_.abort_waiting(
      {grpc::StatusCode::UNAVAILABLE, fmt::format("parameter server {} is shutting down", store_.options().server)});
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

ParameterServer::~ParameterServer() { shutdown(); }

}  // namespace dtrain::ps
