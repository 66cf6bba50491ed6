#include "rendezvous/rendezvous_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "rendezvous/rendezvous_client.h"

namespace dtrain::rendezvous {
namespace {

constexpr const char* kToken = "00112233445566778899aabbccddeeff";

class RendezvousServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    port_ = server_.start("127.0.0.1");
    ASSERT_GT(port_, 0);
  }

  // A client speaking the store's protocol `version` ("" for none, as builds before versions).
  httplib::Client client(const std::string& token = kToken, const std::string& version = "2") {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(5);
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("X-Dtrain-Token", token);
    if (!version.empty()) headers.emplace("X-Dtrain-Rendezvous-Version", version);
    c.set_default_headers(headers);
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
  for (const std::string& token :
       {std::string("ffffffffffffffffffffffffffffffff"), std::string("short"), std::string()}) {
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

// Ranks and a launcher from different dtrain builds: the store refuses a request of another
// protocol version (or of none) without touching its values, naming both versions.
TEST_F(RendezvousServerTest, ARequestOfAnotherProtocolVersionIsRefusedNamingBoth) {
  ASSERT_EQ(client().Put("/v1/kv/shared", "v1", "text/plain")->status, 200);
  for (const std::string& version : {std::string("1"), std::string()}) {
    auto c = client(kToken, version);
    auto put = c.Put("/v1/kv/shared", "from another build", "text/plain");
    ASSERT_TRUE(put);
    EXPECT_EQ(put->status, 409) << "version '" << version << "'";
    EXPECT_EQ(put->get_header_value("X-Dtrain-Rendezvous-Version"), "2");
    EXPECT_EQ(put->body, "dtrain rendezvous: this store speaks protocol version 2, the request " +
                             (version.empty() ? std::string("none (a dtrain build before versions)") : version));
    EXPECT_EQ(c.Post("/v1/ready/0")->status, 409);
  }
  EXPECT_EQ(server_.value("shared"), "v1");
  EXPECT_FALSE(server_.is_ready(0));
}

// The client's side: a store of another version is a one-line error naming both versions.
TEST(RendezvousClient, AStoreOfAnotherProtocolVersionIsAnErrorNamingBoth) {
  httplib::Server other_build;
  other_build.set_pre_routing_handler([](const httplib::Request&, httplib::Response& res) {
    res.status = 409;
    res.set_header("X-Dtrain-Rendezvous-Version", "3");
    // Answered before the request's body is read: on a kept-alive connection the unread body
    // would be parsed as the next request (a 400). A new connection for each request.
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  const int port = other_build.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread serving([&] { other_build.listen_after_bind(); });
  {  // closed before the server stops (a kept-alive connection would hold stop() up)
    RendezvousClient client("127.0.0.1", port, kToken);
    const std::string expected = "dtrain: the rendezvous store 127.0.0.1:" + std::to_string(port) +
                                 " speaks rendezvous protocol version 3, this process version 2 (the launcher and "
                                 "this rank come from different dtrain builds)";
    try {
      client.set("k", "v");
      ADD_FAILURE() << "set() succeeded against a store of another version";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
    try {
      client.try_get("k");
      ADD_FAILURE() << "try_get() succeeded against a store of another version";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
  other_build.stop();
  serving.join();
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

// A rank reads all its peers' addresses in one request: the store answers once the last of
// them is set, with the values in the order asked.
TEST_F(RendezvousServerTest, ABatchedWaitAnswersOnceEveryKeyExists) {
  RendezvousClient reader("127.0.0.1", port_, kToken);
  RendezvousClient writer("127.0.0.1", port_, kToken);
  writer.set("addr/2", "two");
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    writer.set("addr/0", "zero");
    writer.set("addr/1", std::string("one\n\0", 5));  // values are bytes: newlines and NULs too
  });
  const std::vector<std::string> values = reader.wait_get_all({"addr/0", "addr/1", "addr/2"}, std::chrono::seconds(60));
  late.join();
  EXPECT_EQ(values, (std::vector<std::string>{"zero", std::string("one\n\0", 5), "two"}));
  EXPECT_EQ(reader.wait_get("addr/2", std::chrono::seconds(60)), "two");
}

TEST_F(RendezvousServerTest, AWaitThatTimesOutNamesTheKeysStillMissing) {
  RendezvousClient client("127.0.0.1", port_, kToken);
  client.set("here", "v");
  try {
    client.wait_get_all({"here", "rank/7", "rank/9"}, std::chrono::milliseconds(100));
    ADD_FAILURE() << "a wait for keys nobody sets succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "dtrain: timed out after 0 s waiting for 'rank/7' and 1 more keys in the "
              "rendezvous store 127.0.0.1:" +
                  std::to_string(port_) + " (did every rank start?)");
  }
}

TEST_F(RendezvousServerTest, AMalformedWaitIs400NamingWhatIsWrong) {
  auto c = client();
  auto bad_key = c.Post("/v1/wait?timeout_ms=0", "good/key\nbad key\n", "text/plain");
  ASSERT_TRUE(bad_key);
  EXPECT_EQ(bad_key->status, 400);
  EXPECT_EQ(bad_key->body, "dtrain rendezvous: line 2 of the wait's key list is not a key ([A-Za-z0-9._/:-]+)");
  auto no_keys = c.Post("/v1/wait", "", "text/plain");
  ASSERT_TRUE(no_keys);
  EXPECT_EQ(no_keys->status, 400);
  EXPECT_EQ(no_keys->body, "dtrain rendezvous: a wait names no keys");
  auto bad_timeout = c.Post("/v1/wait?timeout_ms=soon", "k\n", "text/plain");
  ASSERT_TRUE(bad_timeout);
  EXPECT_EQ(bad_timeout->status, 400);
  EXPECT_EQ(bad_timeout->body, "dtrain rendezvous: timeout_ms=soon is not a number of milliseconds");
}

// stop() while a rank waits: the wait ends (a 404, or the connection closes), stop() returns.
TEST(RendezvousServer, StopsWhileAWaitIsInProgress) {
  RendezvousServer server(kToken, 2);
  const int port = server.start("127.0.0.1");
  std::atomic<bool> waiting_ended{false};
  std::thread rank([&] {
    RendezvousClient client("127.0.0.1", port, kToken);
    try {
      client.wait_get_all({"never/set"}, std::chrono::seconds(3600));
    } catch (const Error&) {}
    waiting_ended = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.stop();
  rank.join();
  EXPECT_TRUE(waiting_ended);
}

TEST(RendezvousServer, StopsPromptlyAndTwice) {
  RendezvousServer server(kToken, 1);
  server.start("127.0.0.1");
  server.stop();
  server.stop();
}

}  // namespace
}  // namespace dtrain::rendezvous
