// `dtrain dashboard`: the jobs under some directories, served read-only over HTTP to a
// browser (docs/dashboard.md). The pages are built in (dashboard_assets.h); the API reads the
// job directories at every request (job_view.h), so a running job is followed as it writes.
// Nothing outside the job directories is served (safe_path.h). A dashboard bound to anything
// but loopback requires a token, as the rendezvous store does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace dtrain::dashboard {

struct DashboardOptions {
  std::vector<std::string> job_roots;  // directories holding job directories (output_path)
  std::string bind = "127.0.0.1";
  int port = 8090;  // 0: any free port
  // Required from every request when `bind` is not loopback: the X-Dtrain-Token header, a
  // ?token= parameter (the page's address) or the cookie the page gets. Empty: one is made.
  std::string token;
  int threads = 32;  // connections served at once (httplib: a thread per connection)
};

bool is_loopback(const std::string& address);

class DashboardServer {
 public:
  explicit DashboardServer(DashboardOptions options);
  ~DashboardServer();
  DashboardServer(const DashboardServer&) = delete;
  DashboardServer& operator=(const DashboardServer&) = delete;

  // Listens; returns the port. Throws std::runtime_error naming the address when it cannot.
  int bind();
  // Serves until stop(), on this thread or (start) on a thread of its own.
  void serve();
  void start();
  void stop();

  // API requests answered so far: a job runner keeps serving after the job's end until the
  // open pages have asked again (and so seen the end).
  uint64_t api_requests() const;

  // The address to open, with the token when one is required.
  std::string url() const;
  const std::string& token() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dtrain::dashboard
