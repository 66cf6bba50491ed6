// The dashboard's HTTP API over loopback: what it serves, what it refuses (traversal, unknown
// jobs, bad parameters, other methods, a missing token) and that it keeps answering many
// clients at once.
#include "dashboard/dashboard_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"

namespace dtrain::dashboard {
namespace {

using Json = nlohmann::ordered_json;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;

// One request as bytes on a socket: the target is sent exactly as written (no client
// normalises or encodes it), and the status line's code is returned.
int raw_status(int port, const std::string& target, const std::string& method = "GET") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string request = method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  if (::write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return -1;
  }
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, static_cast<size_t>(n));
  ::close(fd);
  if (response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

class DashboardServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_text(jobs.path() / "mnist/status.json",
               Json{{"job_name", "mnist"}, {"status", "Completed"}, {"started_at", 100.0}}.dump());
    write_text(jobs.path() / "mnist/metrics.jsonl",
               R"({"time":101,"host":"algo-1","rank":0,"name":"train:loss","value":0.7})"
               "\n");
    write_text(jobs.path() / "mnist/logs/algo-1.log", "[algo-1:0]<stdout>:Step #20\n");
    write_text(jobs.path() / "mnist/timeline.json",
               "[\n{\"name\":\"ALLREDUCE\",\"ph\":\"X\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":0}\n]\n");
    write_text(jobs.path() / "mnist/model.tar.gz", std::string(3 << 20, 'm'));
    write_text(outside.path() / "secret.txt", "secret\n");
    std::filesystem::create_symlink(outside.path() / "secret.txt", jobs.path() / "mnist/secret.txt");
  }

  void start(DashboardOptions options = {}) {
    options.job_roots = {jobs.path().string()};
    options.port = 0;
    server = std::make_unique<DashboardServer>(options);
    port = server->bind();
    server->start();
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
  }

  Json get_json(const std::string& path, int expected_status = 200) {
    auto r = client->Get(path.c_str());
    EXPECT_TRUE(r) << path;
    if (!r) return nullptr;
    EXPECT_EQ(r->status, expected_status) << path << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json") << path;
    return Json::parse(r->body);
  }

  TempDir jobs, outside;
  std::unique_ptr<DashboardServer> server;
  std::unique_ptr<httplib::Client> client;
  int port = 0;
};

TEST_F(DashboardServerTest, ServesThePagesAndTheJobsApi) {
  start();
  auto page = client->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  auto uplot = client->Get("/assets/uPlot.iife.min.js");
  ASSERT_TRUE(uplot);
  EXPECT_EQ(uplot->status, 200);
  EXPECT_NE(uplot->get_header_value("Content-Type").find("javascript"), std::string::npos);

  Json list = get_json("/api/jobs");
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(list["jobs"][0]["status"], "Completed");
  Json detail = get_json("/api/jobs/mnist");
  EXPECT_EQ(detail["timelines"], Json::array({"timeline.json"}));
  Json metrics = get_json("/api/jobs/mnist/metrics?from=0");
  ASSERT_EQ(metrics["samples"].size(), 1u);
  EXPECT_EQ(get_json("/api/jobs/mnist/metrics?from=" + metrics["next"].dump())["samples"].size(), 0u);
  EXPECT_EQ(get_json("/api/jobs/mnist/log?host=algo-1")["text"], "[algo-1:0]<stdout>:Step #20\n");
  Json timeline = get_json("/api/jobs/mnist/timeline?file=timeline.json");
  EXPECT_EQ(timeline["spans"], Json::parse("[[0, 0, 1, 2]]"));

  auto archive = client->Get("/files/mnist/model.tar.gz");
  ASSERT_TRUE(archive);
  EXPECT_EQ(archive->status, 200);
  EXPECT_EQ(archive->body.size(), 3u << 20);
}

TEST_F(DashboardServerTest, AHalfWrittenJobIsShownAsFarAsItIsReadable) {
  write_text(jobs.path() / "broken/status.json", "{\"job_name\": \"broken\", \"status\": \"Runn");
  write_text(jobs.path() / "broken/summary.json", "not json");
  write_text(jobs.path() / "broken/metrics.jsonl",
             "\x01\xff garbage\n"
             R"({"time":1,"host":"algo-1","rank":0,"name":"loss","value":2})"
             "\n{\"time\":2,\"na");
  write_text(jobs.path() / "broken/logs/algo-1.log", "bytes that are not UTF-8: \xc3\x28\n");
  start();
  Json list = get_json("/api/jobs");
  ASSERT_EQ(list["jobs"].size(), 2u);
  EXPECT_EQ(list["jobs"][0]["id"], "broken");
  EXPECT_EQ(list["jobs"][0]["status"], "Unknown");
  EXPECT_EQ(get_json("/api/jobs/broken")["log_hosts"], Json::array({"algo-1"}));
  Json metrics = get_json("/api/jobs/broken/metrics?from=0");
  EXPECT_EQ(metrics["samples"].size(), 1u);
  EXPECT_EQ(metrics["skipped"], 1);
  EXPECT_FALSE(get_json("/api/jobs/broken/log?host=algo-1")["text"].get<std::string>().empty());
}

TEST_F(DashboardServerTest, TraversalIsRefusedHoweverItIsSpelt) {
  start();
  for (const char* target :
       {"/files/mnist/../../etc/passwd", "/files/mnist/%2e%2e/%2e%2e/etc/passwd",
        "/files/mnist/logs/%2E%2E%2F..%2Fsecret", "/files/mnist/secret.txt", "/files/mnist//etc/passwd",
        "/files/mnist/logs/..%5c..%5csecret", "/api/jobs/mnist/log?host=../../secret",
        "/api/jobs/mnist/log?host=..%2F..%2Fsecret", "/api/jobs/mnist/timeline?file=../timeline.json",
        "/api/jobs/mnist/timeline?file=logs%2Falgo-1.log"}) {
    const int status = raw_status(port, target);
    EXPECT_TRUE(status == 400 || status == 404) << target << " answered " << status;
  }
  EXPECT_EQ(raw_status(port, "/files/mnist/metrics.jsonl"), 200);
}

TEST_F(DashboardServerTest, BadRequestsGetAClientErrorWithAMessage) {
  start();
  EXPECT_NE(get_json("/api/jobs/nothing", 404)["error"].get<std::string>().find("no job 'nothing'"), std::string::npos);
  EXPECT_NE(get_json("/api/jobs/mnist/metrics?from=-1", 400)["error"].get<std::string>().find("'from'"),
            std::string::npos);
  EXPECT_NE(get_json("/api/jobs/mnist/metrics?from=12x", 400)["error"].get<std::string>().find("12x"),
            std::string::npos);
  get_json("/api/jobs/mnist/log", 400);
  get_json("/api/jobs/mnist/log?host=algo-9", 404);
  get_json("/api/jobs/mnist/timeline?file=metrics.jsonl", 400);
  get_json("/no/such/page", 404);
  auto post = client->Post("/api/jobs", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(raw_status(port, "/api/jobs", "DELETE"), 405);
}

TEST_F(DashboardServerTest, OffLoopbackEveryRequestNeedsTheToken) {
  DashboardOptions options;
  options.bind = "0.0.0.0";
  options.token = "s3cret";
  start(options);
  EXPECT_EQ(server->url().find("?token=s3cret") != std::string::npos, true) << server->url();
  get_json("/api/jobs", 403);
  EXPECT_EQ(raw_status(port, "/"), 403);
  EXPECT_EQ(raw_status(port, "/?token=wrong"), 403);
  EXPECT_EQ(get_json("/api/jobs?token=s3cret")["jobs"].size(), 1u);
  auto page = client->Get("/?token=s3cret");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  // The page's own requests carry the cookie it was given.
  const std::string cookie = page->get_header_value("Set-Cookie");
  ASSERT_EQ(cookie.rfind("dtrain_token=s3cret;", 0), 0u) << cookie;
  auto with_cookie = client->Get("/api/jobs", {{"Cookie", "dtrain_token=s3cret"}});
  ASSERT_TRUE(with_cookie);
  EXPECT_EQ(with_cookie->status, 200);
  auto with_header = client->Get("/api/jobs/mnist", {{"X-Dtrain-Token", "s3cret"}});
  ASSERT_TRUE(with_header);
  EXPECT_EQ(with_header->status, 200);
}

TEST_F(DashboardServerTest, ManyClientsAtOnceAreAllAnswered) {
  start();
  std::atomic<int> answered{0}, failed{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client own("127.0.0.1", port);
      own.set_read_timeout(60, 0);
      for (int i = 0; i < 25; ++i) {
        const char* path = (c + i) % 3 == 0   ? "/api/jobs"
                           : (c + i) % 3 == 1 ? "/api/jobs/mnist"
                                              : "/files/mnist/model.tar.gz";
        auto r = own.Get(path);
        (r && r->status == 200 ? answered : failed)++;
      }
    });
  }
  // Garbage meanwhile (httplib answers 400 and keeps the connection for its keep-alive time).
  for (int i = 0; i < 8; ++i) clients.emplace_back([&] { raw_status(port, "not a request line"); });
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), 16 * 25);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(get_json("/api/jobs")["jobs"].size(), 1u);
}

}  // namespace
}  // namespace dtrain::dashboard
