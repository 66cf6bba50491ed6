#include "runtime/transport/gloo/http_store.h"

namespace dtrain::runtime {

HttpStore::HttpStore(const std::string& host, int port, std::string token, std::chrono::milliseconds timeout)
    : client_(host, port, std::move(token)), timeout_(timeout) {}

HttpStore::~HttpStore() = default;

void HttpStore::set(const std::string& key, const std::vector<char>& data) {
  client_.set(key, std::string(data.begin(), data.end()));
}

std::vector<char> HttpStore::get(const std::string& key) {
  const std::string value = client_.wait_get(key, timeout_);
  return {value.begin(), value.end()};
}

void HttpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& key : keys) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    client_.wait_get(key, std::max(left, std::chrono::milliseconds(0)));
  }
}

void HttpStore::report_ready(int rank) { client_.report_ready(rank); }

}  // namespace dtrain::runtime
