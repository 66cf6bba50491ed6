#include "dashboard/dashboard_server.h"

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "concurrency/mutex.h"
#include "dashboard/dashboard_assets.h"
#include "dashboard/job_catalog.h"
#include "dashboard/job_view.h"
#include "dashboard/safe_path.h"
#include "dashboard/timeline_reader.h"
#include "launch/job_identity.h"

namespace dtrain::dashboard {
namespace {

using Json = nlohmann::ordered_json;

constexpr const char* kTokenHeader = "X-Dtrain-Token";
constexpr const char* kTokenCookie = "dtrain_token";
constexpr uint64_t kMaxTimelineBytes = 256ull << 20;  // parsed whole in memory

std::string dump(const Json& body) { return body.dump(-1, ' ', false, Json::error_handler_t::replace); }

void answer(httplib::Response& response, const Json& body, int status = 200) {
  response.status = status;
  response.set_header("Cache-Control", "no-store");
  response.set_content(dump(body), "application/json");
}

void answer_error(httplib::Response& response, int status, const std::string& message) {
  answer(response, Json{{"error", message}}, status);
}

// A query parameter that must be a non-negative integer; nullopt when absent.
std::optional<uint64_t> offset_parameter(const httplib::Request& request, const char* name) {
  if (!request.has_param(name)) return std::nullopt;
  const std::string text = request.get_param_value(name);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) {
    throw std::invalid_argument(
        fmt::format("'{}' must be a byte offset (a non-negative integer), not '{}'", name, text));
  }
  return value;
}

bool same_secret(const std::string& given, const std::string& expected) {
  if (given.size() != expected.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < given.size(); ++i) difference |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return difference == 0;
}

std::string cookie_value(const httplib::Request& request, const std::string& name) {
  const std::string cookies = request.get_header_value("Cookie");
  size_t start = 0;
  while (start < cookies.size()) {
    size_t end = cookies.find(';', start);
    if (end == std::string::npos) end = cookies.size();
    std::string part = cookies.substr(start, end - start);
    part.erase(0, part.find_first_not_of(' '));
    if (part.starts_with(name + "=")) return part.substr(name.size() + 1);
    start = end + 1;
  }
  return "";
}

const char* content_type_for_file(const std::string& path) {
  if (path.ends_with(".json") || path.ends_with(".jsonl")) return "application/json";
  if (path.ends_with(".log") || path.ends_with(".txt") || path.ends_with(".yaml")) return "text/plain; charset=utf-8";
  if (path.ends_with(".png")) return "image/png";
  if (path.ends_with(".gz")) return "application/gzip";
  return "application/octet-stream";
}

// Debian's httplib is a compiled library that listens with a backlog of 5: a page opening (a
// dozen requests at once) or a burst of clients overflows it, and the kernel drops the extra
// connections, which the clients retry a second later. Listening again on the bound socket
// raises the backlog (Linux allows it); the socket is found by its port among this
// process's listening sockets.
void raise_listen_backlog(int port) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    const std::string name = entry.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || !listening) continue;
    sockaddr_storage address{};
    socklen_t address_length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &address_length) != 0) continue;
    int bound = -1;
    if (address.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    if (address.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
}

}  // namespace

// The last timeline parsed, kept while its file is unchanged: the page asks again when it
// is opened, and a large trace takes seconds to parse.
class TimelineCache {
 public:
  std::shared_ptr<const std::string> get(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot read " + path);
    if (static_cast<uint64_t>(st.st_size) > kMaxTimelineBytes) {
      throw std::length_error(
          fmt::format("the timeline is {} bytes, more than the dashboard reads ({})", st.st_size, kMaxTimelineBytes));
    }
    concurrency::MutexLock lock(mutex_);
    if (path == path_ && st.st_mtim.tv_sec == mtime_.tv_sec && st.st_mtim.tv_nsec == mtime_.tv_nsec &&
        st.st_size == size_) {
      return body_;
    }
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    body_ = std::make_shared<const std::string>(dump(to_json(parse_timeline(text))));
    path_ = path;
    mtime_ = st.st_mtim;
    size_ = st.st_size;
    return body_;
  }

 private:
  static Json to_json(const Timeline& timeline) {
    Json spans = Json::array();
    for (const auto& s : timeline.spans) spans.push_back({s.track, s.activity, s.start_us, s.duration_us});
    Json instants = Json::array();
    for (const auto& i : timeline.instants) instants.push_back({i.track, i.name, i.time_us});
    return {{"tracks", timeline.tracks}, {"activities", timeline.activities}, {"spans", spans},
            {"instants", instants},      {"truncated", timeline.truncated},   {"skipped", timeline.skipped}};
  }

  concurrency::Mutex mutex_;
  std::string path_ DTRAIN_GUARDED_BY(mutex_);
  timespec mtime_ DTRAIN_GUARDED_BY(mutex_){};
  off_t size_ DTRAIN_GUARDED_BY(mutex_) = 0;
  std::shared_ptr<const std::string> body_ DTRAIN_GUARDED_BY(mutex_);
};

bool is_loopback(const std::string& address) {
  return address.starts_with("127.") || address == "::1" || address == "localhost";
}

struct DashboardServer::Impl {
  DashboardOptions options;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  TimelineCache timelines;
  std::atomic<uint64_t> api_requests{0};

  bool token_required() const { return !is_loopback(options.bind); }

  bool authorised(const httplib::Request& request) const {
    if (!token_required()) return true;
    for (const std::string& given : {request.get_header_value(kTokenHeader), request.get_param_value("token"),
                                     cookie_value(request, kTokenCookie)}) {
      if (!given.empty() && same_secret(given, options.token)) return true;
    }
    return false;
  }

  JobLocation job_or_throw(const std::string& id) const {
    auto job = find_job(options.job_roots, id);
    if (!job) throw std::out_of_range(fmt::format("no job '{}' under {}", id, fmt::join(options.job_roots, ", ")));
    return *job;
  }

  void serve_file(const JobLocation& job, const std::string& relative, httplib::Response& response) {
    const ResolvedPath file = resolve_file_inside(job.dir, relative);
    if (file.status != 200) return answer_error(response, file.status, fmt::format("{}: {}", relative, file.error));
    auto in = std::make_shared<std::ifstream>(file.path, std::ios::binary | std::ios::ate);
    if (!*in) return answer_error(response, 404, relative + ": cannot be read");
    const auto size = static_cast<size_t>(in->tellg());
    in->seekg(0);
    response.set_content_provider(size, content_type_for_file(file.path),
                                  [in](size_t offset, size_t length, httplib::DataSink& sink) {
                                    std::string buffer(std::min<size_t>(length, 1 << 20), '\0');
                                    in->seekg(static_cast<std::streamoff>(offset));
                                    in->read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
                                    const auto got = static_cast<size_t>(in->gcount());
                                    if (got == 0) return false;
                                    return sink.write(buffer.data(), got);
                                  });
  }

  void serve_timeline(const JobLocation& job, const std::string& name, httplib::Response& response) {
    if (name.find('/') != std::string::npos || name.find("timeline") == std::string::npos || !name.ends_with(".json")) {
      return answer_error(
          response, 400,
          fmt::format("'{}' is not a timeline of the job (a *timeline*.json file in its directory)", name));
    }
    const ResolvedPath file = resolve_file_inside(job.dir, name);
    if (file.status != 200) return answer_error(response, file.status, fmt::format("{}: {}", name, file.error));
    auto body = timelines.get(file.path);
    response.set_header("Cache-Control", "no-store");
    response.set_content(*body, "application/json");
  }

  void install_routes() {
    const int threads = options.threads;
    http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    // httplib gives each connection a thread while it lives. Browsers keep idle connections
    // open (several per tab): close them after a second of silence, so a few open pages do
    // not hold every thread; a client that connects and says nothing is dropped after 10 s.
    http.set_keep_alive_timeout(1);
    http.set_read_timeout(10, 0);
    http.set_write_timeout(30, 0);
    http.set_payload_max_length(64 << 10);
    http.set_pre_routing_handler([this](const httplib::Request& request, httplib::Response& response) {
      if (authorised(request)) {
        if (request.path.starts_with("/api/")) ++api_requests;
        return httplib::Server::HandlerResponse::Unhandled;
      }
      answer_error(response, 403,
                   "this dashboard needs its token: open the address `dtrain dashboard` printed (with ?token=)");
      return httplib::Server::HandlerResponse::Handled;
    });
    auto page = [this](const httplib::Request& request, httplib::Response& response) {
      const auto index = find_asset("index.html");
      if (token_required() && request.has_param("token")) {
        // The page's own requests (scripts, API, artifacts) then carry the token by themselves.
        response.set_header("Set-Cookie",
                            fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict", kTokenCookie, options.token));
      }
      response.set_content(std::string(index->bytes), index->content_type);
    };
    http.Get("/", page);
    http.Get("/index.html", page);
    http.Get(R"(/assets/([A-Za-z0-9_.-]+))", [](const httplib::Request& request, httplib::Response& response) {
      const auto asset = find_asset(request.matches[1].str());
      if (!asset) return answer_error(response, 404, "no asset " + request.matches[1].str());
      response.set_content(std::string(asset->bytes), asset->content_type);
    });
    http.Get("/api/jobs", [this](const httplib::Request&, httplib::Response& response) {
      Json jobs = Json::array();
      for (const auto& job : find_jobs(options.job_roots)) jobs.push_back(job_summary(job));
      answer(response, {{"jobs", jobs}});
    });
    http.Get(R"(/api/jobs/([^/]+))", [this](const httplib::Request& request, httplib::Response& response) {
      answer(response, job_detail(job_or_throw(request.matches[1].str())));
    });
    http.Get(R"(/api/jobs/([^/]+)/metrics)", [this](const httplib::Request& request, httplib::Response& response) {
      const JobLocation job = job_or_throw(request.matches[1].str());
      answer(response, metric_samples(job, offset_parameter(request, "from").value_or(0)));
    });
    http.Get(R"(/api/jobs/([^/]+)/log)", [this](const httplib::Request& request, httplib::Response& response) {
      const JobLocation job = job_or_throw(request.matches[1].str());
      const std::string host = request.get_param_value("host");
      if (host.empty()) return answer_error(response, 400, "which host's log? (?host=algo-1)");
      const ResolvedPath log = resolve_file_inside(job.dir, "logs/" + host + ".log");
      if (log.status != 200) return answer_error(response, log.status, fmt::format("log of '{}': {}", host, log.error));
      answer(response, log_lines(job, host, offset_parameter(request, "from")));
    });
    http.Get(R"(/api/jobs/([^/]+)/timeline)", [this](const httplib::Request& request, httplib::Response& response) {
      const JobLocation job = job_or_throw(request.matches[1].str());
      const std::string file = request.get_param_value("file");
      if (file.empty()) return answer_error(response, 400, "which timeline? (?file=timeline.json)");
      serve_timeline(job, file, response);
    });
    http.Get(R"(/files/([^/]+)/(.+))", [this](const httplib::Request& request, httplib::Response& response) {
      serve_file(job_or_throw(request.matches[1].str()), request.matches[2].str(), response);
    });
    // Read-only: every other method is refused, naming what is allowed.
    auto read_only = [](const httplib::Request& request, httplib::Response& response) {
      response.set_header("Allow", "GET, HEAD");
      answer_error(response, 405, fmt::format("{} {}: the dashboard is read-only", request.method, request.path));
    };
    http.Post(".*", read_only);
    http.Put(".*", read_only);
    http.Delete(".*", read_only);
    http.Patch(".*", read_only);
    http.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
      if (!response.body.empty()) return;
      answer_error(response, response.status,
                   response.status == 404
                       ? fmt::format("no such page: {}", request.path)
                       : fmt::format("{} {}: HTTP {}", request.method, request.path, response.status));
    });
    http.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
      try {
        if (error) std::rethrow_exception(error);
        answer_error(response, 500, "internal error");
      } catch (const std::out_of_range& e) {
        answer_error(response, 404, e.what());
      } catch (const std::invalid_argument& e) {
        answer_error(response, 400, e.what());
      } catch (const std::length_error& e) {
        answer_error(response, 413, e.what());
      } catch (const std::exception& e) {
        answer_error(response, 500, std::string("internal error: ") + e.what());
      } catch (...) {
        answer_error(response, 500, "internal error");
      }
    });
  }
};

DashboardServer::DashboardServer(DashboardOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.job_roots.empty()) throw std::invalid_argument("the dashboard needs at least one jobs directory");
  if (!is_loopback(options.bind) && options.token.empty()) options.token = launch::random_hex(16);
  impl_->options = std::move(options);
  impl_->install_routes();
}

DashboardServer::~DashboardServer() { stop(); }

int DashboardServer::bind() {
  const auto& o = impl_->options;
  const int port =
      o.port == 0 ? impl_->http.bind_to_any_port(o.bind) : (impl_->http.bind_to_port(o.bind, o.port) ? o.port : -1);
  if (port <= 0) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{} (in use, or not an address of this host)", o.bind, o.port));
  }
  impl_->port = port;
  raise_listen_backlog(port);
  return port;
}

void DashboardServer::serve() { impl_->http.listen_after_bind(); }

void DashboardServer::start() {
  // The server's threads take no signals: the program that runs it (a job runner with its
  // signalfd) decides what a signal does, whichever thread the kernel would pick.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  impl_->thread = std::thread([this] { serve(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

uint64_t DashboardServer::api_requests() const { return impl_->api_requests.load(); }

void DashboardServer::stop() {
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string DashboardServer::url() const {
  const auto& o = impl_->options;
  const std::string host = o.bind == "0.0.0.0" || o.bind == "::" ? "HOST" : o.bind;
  std::string url =
      fmt::format("http://{}:{}/", host.find(':') != std::string::npos ? "[" + host + "]" : host, impl_->port);
  if (impl_->token_required()) url += "?token=" + o.token;
  return url;
}

const std::string& DashboardServer::token() const { return impl_->options.token; }

}  // namespace dtrain::dashboard
