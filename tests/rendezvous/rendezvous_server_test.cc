#include "rendezvous/rendezvous_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

namespace dtrain::rendezvous {
namespace {

constexpr const char* kToken = "00112233445566778899aabbccddeeff";

class RendezvousServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = server_.start("127.0.0.1");
    ASSERT_GT(port_, 0);
  }

  httplib::Client client(const std::string& token = kToken) {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    if (!token.empty()) c.set_default_headers({{"X-Dtrain-Token", token}});
    return c;
  }

  RendezvousServer server_{kToken, 4};
  int port_ = 0;
};

TEST_F(RendezvousServerTest, PutThenGetRoundTripsRawBytes) {
  auto c = client();
  std::string value("\x00\x01\xff binary\r\n", 12);
  auto put = c.Put("/v1/kv/gloo/rank.0/addr:1", value, "application/octet-stream");
  ASSERT_TRUE(put) << httplib::to_string(put.error());
  EXPECT_EQ(put->status, 200);

  auto get = c.Get("/v1/kv/gloo/rank.0/addr:1");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, value);
  EXPECT_EQ(server_.value("gloo/rank.0/addr:1"), value);

  // Overwrite and empty values are fine.
  ASSERT_EQ(c.Put("/v1/kv/k", "", "application/octet-stream")->status, 200);
  auto empty = c.Get("/v1/kv/k");
  EXPECT_EQ(empty->status, 200);
  EXPECT_EQ(empty->body, "");
}

TEST_F(RendezvousServerTest, MissingKeyIs404) {
  auto get = client().Get("/v1/kv/not-there");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 404);
}

TEST_F(RendezvousServerTest, WrongOrMissingTokenIs403) {
  ASSERT_EQ(client().Put("/v1/kv/secret", "v", "text/plain")->status, 200);
  for (const std::string& token : {std::string("ffffffffffffffffffffffffffffffff"),
                                   std::string("short"), std::string()}) {
    auto c = client(token);
    auto expect_forbidden = [&](const httplib::Result& res) {
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 403) << "token '" << token << "'";
      EXPECT_EQ(res->body, "dtrain rendezvous: bad or missing job token");
    };
    expect_forbidden(c.Get("/v1/kv/secret"));
    expect_forbidden(c.Put("/v1/kv/secret", "x", "text/plain"));
    expect_forbidden(c.Post("/v1/ready/0"));
    expect_forbidden(c.Get("/nonsense"));
  }
  EXPECT_EQ(server_.value("secret"), "v");
  EXPECT_FALSE(server_.is_ready(0));
}

TEST_F(RendezvousServerTest, TracksReadyRanks) {
  auto c = client();
  EXPECT_TRUE(server_.ready_ranks().empty());
  EXPECT_EQ(c.Post("/v1/ready/2")->status, 200);
  EXPECT_EQ(c.Post("/v1/ready/0")->status, 200);
  EXPECT_EQ(c.Post("/v1/ready/2")->status, 200);  // repeated posts are harmless
  EXPECT_TRUE(server_.is_ready(0));
  EXPECT_FALSE(server_.is_ready(1));
  EXPECT_TRUE(server_.is_ready(2));
  EXPECT_EQ(server_.ready_ranks(), (std::vector<int>{0, 2}));
  EXPECT_EQ(c.Post("/v1/ready/4")->status, 400);  // world size is 4
  EXPECT_EQ(c.Post("/v1/ready/x")->status, 404);
}

TEST_F(RendezvousServerTest, ConcurrentClientsSeeEachOthersValues) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int r = 0; r < 4; ++r) {
    threads.emplace_back([&, r] {
      auto c = client();
      c.Put("/v1/kv/addr/" + std::to_string(r), "rank" + std::to_string(r), "text/plain");
      for (int peer = 0; peer < 4; ++peer) {
        for (int attempt = 0; attempt < 500; ++attempt) {
          auto res = c.Get("/v1/kv/addr/" + std::to_string(peer));
          if (res && res->status == 200) {
            if (res->body == "rank" + std::to_string(peer)) ++ok;
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 16);
}

TEST(RendezvousServer, StopsPromptlyAndTwice) {
  RendezvousServer server(kToken, 1);
  server.start("127.0.0.1");
  server.stop();
  server.stop();
}

}  // namespace
}  // namespace dtrain::rendezvous
