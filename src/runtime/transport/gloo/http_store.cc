#include "runtime/transport/gloo/http_store.h"

namespace dtrain::runtime {

HttpStore::HttpStore(const std::string& host, int port, std::string token, std::chrono::milliseconds timeout)
    : client_(host, port, std::move(token)), timeout_(timeout) {}

HttpStore::~HttpStore() = default;

void HttpStore::set(const std::string& key, const std::vector<char>& data) {
  client_.set(key, std::string(data.begin(), data.end()));
}

std::vector<char> HttpStore::get(const std::string& key) {
  if (auto waited = waited_.extract(key)) return {waited.mapped().begin(), waited.mapped().end()};
  const std::string value = client_.wait_get(key, timeout_);
  return {value.begin(), value.end()};
}

void HttpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  std::vector<std::string> values = client_.wait_get_all(keys, timeout);
  for (std::size_t i = 0; i < keys.size(); ++i) waited_[keys[i]] = std::move(values[i]);
}

std::vector<std::string> HttpStore::get_all(const std::vector<std::string>& keys) {
  return client_.wait_get_all(keys, timeout_);
}

void HttpStore::report_ready(int rank) { client_.report_ready(rank); }

}  // namespace dtrain::runtime
