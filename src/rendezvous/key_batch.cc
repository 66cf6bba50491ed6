#include "rendezvous/key_batch.h"

#include <charconv>

#include <fmt/format.h>

#include "dtrain/error.h"

namespace dtrain::rendezvous {

bool is_valid_key(std::string_view key) {
  if (key.empty()) return false;
  for (const char c : key) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                         c == '_' || c == '/' || c == ':' || c == '-';
    if (!allowed) return false;
  }
  return true;
}

std::string encode_key_list(const std::vector<std::string>& keys) {
  std::string body;
  for (const std::string& key : keys) {
    body += key;
    body += '\n';
  }
  return body;
}

std::vector<std::string> parse_key_list(std::string_view body, std::size_t max_keys) {
  std::vector<std::string> keys;
  std::size_t line = 1;
  while (!body.empty()) {
    const std::size_t end = body.find('\n');
    const std::string_view key = body.substr(0, end);
    if (!is_valid_key(key)) {
      throw Error(
          fmt::format("dtrain rendezvous: line {} of the wait's key list is not a key ([A-Za-z0-9._/:-]+)", line));
    }
    if (keys.size() == max_keys) {
      throw Error(fmt::format("dtrain rendezvous: a wait names more than {} keys", max_keys));
    }
    keys.emplace_back(key);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    ++line;
  }
  if (keys.empty()) throw Error("dtrain rendezvous: a wait names no keys");
  return keys;
}

std::string encode_values(const std::vector<std::string>& values) {
  std::string body;
  for (const std::string& value : values) {
    body += std::to_string(value.size());
    body += '\n';
    body += value;
  }
  return body;
}

std::vector<std::string> decode_values(std::string_view body, std::size_t count) {
  std::vector<std::string> values;
  const std::size_t total = body.size();
  const auto malformed = [&](std::string_view what) {
    return Error(fmt::format("dtrain rendezvous: the store's answer to a wait is malformed at byte {} of {}: {}",
                             total - body.size(), total, what));
  };
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t newline = body.find('\n');
    if (newline == std::string_view::npos) throw malformed(fmt::format("value {} of {} is missing", i + 1, count));
    std::size_t length = 0;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + newline, length);
    const bool canonical = newline == 1 || body[0] != '0';  // one encoding per answer: no leading zeros
    if (ec != std::errc() || end != body.data() + newline || newline == 0 || !canonical) {
      throw malformed("a value's length is not a number");
    }
    body.remove_prefix(newline + 1);
    if (length > body.size()) throw malformed(fmt::format("a value of {} bytes where {} remain", length, body.size()));
    values.emplace_back(body.substr(0, length));
    body.remove_prefix(length);
  }
  if (!body.empty()) throw malformed(fmt::format("{} bytes after the {} values", body.size(), count));
  return values;
}

}  // namespace dtrain::rendezvous
