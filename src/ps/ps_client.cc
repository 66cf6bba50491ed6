#include "ps/ps_client.h"

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include "ps/grpc_lifetime.h"
#include "ps/parameter_server.grpc.pb.h"
#include "ps/ps_error.h"
#include "ps/ps_service.h"
#include "rendezvous/rendezvous_client.h"
#include "settings/env_setting.h"

namespace dtrain::ps {
namespace {

std::string env_text(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

int env_int(const char* name) {
  const std::string text = env_text(name);
  if (text.empty())
    throw PsError(fmt::format("{} is not set; start parameter-server workers with `dtrain run --ps`", name));
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw PsError(fmt::format("{}={} is not an integer", name, text));
  }
}

std::string code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "deadline exceeded";
    case grpc::StatusCode::UNAVAILABLE: return "unavailable";
    case grpc::StatusCode::UNAUTHENTICATED: return "unauthenticated";
    case grpc::StatusCode::INVALID_ARGUMENT: return "invalid argument";
    case grpc::StatusCode::FAILED_PRECONDITION: return "failed precondition";
    case grpc::StatusCode::CANCELLED: return "cancelled";
    default: return fmt::format("status {}", static_cast<int>(code));
  }
}

}  // namespace

PsClientOptions ps_client_options_from_environment() {
  PsClientOptions options;
  options.worker = env_int("DTRAIN_RANK");
  options.num_workers = env_int("DTRAIN_SIZE");
  const int servers = env_int("DTRAIN_PS_SERVERS");
  if (servers < 1) throw PsError(fmt::format("DTRAIN_PS_SERVERS={} must be at least 1", servers));
  options.token = env_text("DTRAIN_JOB_TOKEN");
  if (options.token.empty())
    throw PsError("DTRAIN_JOB_TOKEN is not set; start parameter-server workers with `dtrain run --ps`");
  try {
    if (const auto timeout = settings::env_seconds("DTRAIN_PS_RPC_TIMEOUT")) options.rpc_timeout_s = *timeout;
  } catch (const settings::SettingError& e) {
    throw PsError(e.what());
  }
  const std::string job = env_text("DTRAIN_JOB_ID").empty() ? "job" : env_text("DTRAIN_JOB_ID");
  rendezvous::RendezvousClient store(env_text("DTRAIN_RENDEZVOUS_ADDR"), env_int("DTRAIN_RENDEZVOUS_PORT"),
                                     options.token);
  const auto wait = std::chrono::milliseconds(static_cast<long long>(options.rpc_timeout_s * 1000));
  for (int i = 0; i < servers; ++i) {
    try {
      options.servers.push_back(store.wait_get(fmt::format("{}/ps/server/{}", job, i), wait));
    } catch (const std::exception& e) {
      throw PsError(fmt::format("parameter server {} never published its address: {}", i, e.what()));
    }
  }
  store.report_ready(options.worker);
  return options;
}

struct PsClient::Server {
  std::string address;
  std::unique_ptr<wire::ParameterServer::Stub> stub;
};

PsClient::PsClient(PsClientOptions options, ShardPlan plan) : options_(std::move(options)), plan_(std::move(plan)) {
  if (static_cast<int>(options_.servers.size()) != plan_.servers()) {
    throw PsError(fmt::format("parameter servers: the plan is for {} servers, {} addresses given", plan_.servers(),
                              options_.servers.size()));
  }
  hold_grpc_until_exit();
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(INT_MAX);
  arguments.SetMaxSendMessageSize(INT_MAX);
  for (const auto& address : options_.servers) {
    auto server = std::make_unique<Server>();
    server->address = address;
    server->stub = wire::ParameterServer::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments));
    servers_.push_back(std::move(server));
  }
}

PsClient::~PsClient() {
  {
    concurrency::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  // Every RPC has a deadline, so each push in flight completes, with an error at worst.
  concurrency::MutexLock lock(mutex_);
  while (pushes_in_flight_ > 0) wake_.wait(lock);
}

void PsClient::push_finished() {
  concurrency::MutexLock lock(mutex_);
  --pushes_in_flight_;
  wake_.notify_all();
}

std::string PsClient::describe(int server) const {
  return fmt::format("parameter server {} ({})", server, servers_[static_cast<size_t>(server)]->address);
}

std::string PsClient::failure(const std::string& doing, int server, const grpc::Status& status) const {
  return fmt::format("worker {}: {} {}: {}: {}", options_.worker, doing, describe(server),
                     code_name(status.error_code()), status.error_message());
}

namespace {

// A context with the job token and the request deadline.
std::unique_ptr<grpc::ClientContext> request_context(const PsClientOptions& options) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->AddMetadata(kTokenMetadata, options.token);
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<long long>(options.rpc_timeout_s * 1000)));
  return context;
}

}  // namespace

PsClient::Registration PsClient::register_worker(const UpdateRuleSpec& rule,
                                                 const std::function<const float*(const Piece&)>& initial_value,
                                                 std::int64_t start_step) {
  wire::OptimizerSpec spec;
  spec.set_kind(rule.kind == UpdateRuleSpec::Kind::kAdam ? "adam" : "sgd");
  spec.set_momentum(rule.momentum);
  spec.set_dampening(rule.dampening);
  spec.set_nesterov(rule.nesterov);
  spec.set_weight_decay(rule.weight_decay);
  spec.set_beta1(rule.beta1);
  spec.set_beta2(rule.beta2);
  spec.set_eps(rule.eps);

  // One request per server, all in flight at once: the non-chiefs' wait for the chief's.
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    wire::RegisterRequest request;
    wire::RegisterReply reply;
    grpc::Status status;
    bool done = false;
  };
  std::vector<Call> calls(servers_.size());
  concurrency::Mutex mutex;
  concurrency::ConditionVariable finished;
  for (size_t s = 0; s < servers_.size(); ++s) {
    Call& call = calls[s];
    call.context = request_context(options_);
    call.request.set_worker(options_.worker);
    call.request.set_num_workers(options_.num_workers);
    call.request.set_start_step(start_step);
    call.request.set_protocol_version(kProtocolVersion);
    *call.request.mutable_optimizer() = spec;
    for (int index : plan_.pieces_on_server(static_cast<int>(s))) {
      const Piece& piece = plan_.pieces()[static_cast<size_t>(index)];
      auto* declared = call.request.add_pieces();
      declared->set_name(piece.name);
      declared->set_elements(piece.elements);
      if (options_.worker == 0) {
        call.request.add_initial_values(initial_value(piece), static_cast<size_t>(piece.elements) * sizeof(float));
      }
    }
    servers_[s]->stub->async()->Register(call.context.get(), &call.request, &call.reply,
                                         [&call, &mutex, &finished](grpc::Status status) {
                                           concurrency::MutexLock lock(mutex);
                                           call.status = std::move(status);
                                           call.done = true;
                                           finished.notify_all();
                                         });
  }
  {
    concurrency::MutexLock lock(mutex);
    finished.wait(lock, [&] {
      for (const auto& c : calls) {
        if (!c.done) return false;
      }
      return true;
    });
  }
  for (size_t s = 0; s < calls.size(); ++s) {
    if (!calls[s].status.ok()) {
      throw PsError(failure("registering with", static_cast<int>(s), calls[s].status));
    }
    if (const int version = calls[s].reply.protocol_version(); version != kProtocolVersion) {
      throw PsError(
          fmt::format("worker {}: {} speaks parameter-server protocol version {}, this worker version {} "
                      "(the worker and the server come from different dtrain builds)",
                      options_.worker, describe(static_cast<int>(s)), version, kProtocolVersion));
    }
  }
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
  return {calls.front().reply.mode(), calls.front().reply.start_step()};
}

void PsClient::push(int piece_index, std::int64_t step, double learning_rate, const float* gradient, PushDone done) {
  const Piece& piece = plan_.pieces()[static_cast<size_t>(piece_index)];
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    wire::PushRequest request;
    wire::PushReply reply;
  };
  auto call = std::make_shared<Call>();
  call->context = request_context(options_);
  call->request.set_worker(options_.worker);
  call->request.set_step(step);
  call->request.set_learning_rate(learning_rate);
  call->request.set_piece(piece.name);
  call->request.set_gradient(gradient, static_cast<size_t>(piece.elements) * sizeof(float));
  const int server = piece.server;
  {
    concurrency::MutexLock lock(mutex_);
    ++pushes_in_flight_;
  }
  servers_[static_cast<size_t>(server)]->stub->async()->Push(
      call->context.get(), &call->request, &call->reply,
      [this, call, server, done = std::move(done)](grpc::Status status) mutable {
        if (status.ok()) {
          done({}, std::move(*call->reply.mutable_value()));
        } else {
          done(failure("pushing '" + call->request.piece() + "' to", server, status), {});
        }
        call.reset();  // the RPC's context and buffers go while the client is still there
        push_finished();
      });
}

std::vector<std::string> PsClient::pull(const std::vector<int>& pieces) {
  std::vector<std::string> values(pieces.size());
  for (int s = 0; s < plan_.servers(); ++s) {
    wire::PullRequest request;
    request.set_worker(options_.worker);
    std::vector<size_t> positions;
    for (size_t i = 0; i < pieces.size(); ++i) {
      const Piece& piece = plan_.pieces()[static_cast<size_t>(pieces[i])];
      if (piece.server != s) continue;
      request.add_pieces(piece.name);
      positions.push_back(i);
    }
    if (positions.empty()) continue;
    wire::PullReply reply;
    auto context = request_context(options_);
    grpc::Status status = servers_[static_cast<size_t>(s)]->stub->Pull(context.get(), request, &reply);
    if (!status.ok()) throw PsError(failure("pulling from", s, status));
    if (static_cast<size_t>(reply.values_size()) != positions.size()) {
      throw PsError(fmt::format("worker {}: {} answered {} values for {} pieces", options_.worker, describe(s),
                                reply.values_size(), positions.size()));
    }
    for (size_t k = 0; k < positions.size(); ++k)
      values[positions[k]] = std::move(*reply.mutable_values(static_cast<int>(k)));
  }
  return values;
}

void PsClient::wait_for_other_workers(double timeout_s) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (true) {
    wire::HeartbeatReply reply;
    if (grpc::Status status = heartbeat(0, false, reply); !status.ok()) {
      throw PsError(failure("asking about the other workers at", 0, status));
    }
    if (reply.live_workers() <= 1) return;
    if (std::chrono::steady_clock::now() > deadline) {
      throw PsError(fmt::format("worker {}: {} workers still training after {} s", options_.worker,
                                reply.live_workers() - 1, timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

void PsClient::leave() {
  {
    concurrency::MutexLock lock(mutex_);
    if (left_) return;
    left_ = true;
    stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  for (int s = 0; s < plan_.servers(); ++s) {
    wire::HeartbeatReply reply;
    if (grpc::Status status = heartbeat(s, true, reply); !status.ok()) throw PsError(failure("leaving", s, status));
  }
}

grpc::Status PsClient::heartbeat(int server, bool leaving, wire::HeartbeatReply& reply) {
  wire::HeartbeatRequest request;
  request.set_worker(options_.worker);
  request.set_leaving(leaving);
  auto context = request_context(options_);
  // A heartbeat is tiny: a server that cannot answer within 10 s is in trouble.
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return servers_[static_cast<size_t>(server)]->stub->Heartbeat(context.get(), request, &reply);
}

std::string PsClient::heartbeat_error() const {
  concurrency::MutexLock lock(mutex_);
  return heartbeat_error_;
}

void PsClient::heartbeat_loop() {
  const auto period = std::chrono::milliseconds(static_cast<long long>(options_.heartbeat_s * 1000));
  concurrency::MutexLock lock(mutex_);
  // The predicate runs with mutex_ held (the wait takes it back first); the analysis cannot
  // see through condition_variable_any, hence the lambda's own annotation.
  while (!wake_.wait_for(lock, period, [this]() DTRAIN_REQUIRES(mutex_) { return stopping_; })) {
    lock.unlock();
    std::string error;
    for (int s = 0; s < plan_.servers() && error.empty(); ++s) {
      wire::HeartbeatReply reply;
      if (grpc::Status status = heartbeat(s, false, reply); !status.ok()) error = failure("heartbeat to", s, status);
    }
    lock.lock();
    if (!error.empty() && heartbeat_error_.empty()) heartbeat_error_ = error;
  }
}

}  // namespace dtrain::ps
