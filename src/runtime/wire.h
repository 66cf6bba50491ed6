// A minimal binary encoding for the control messages ranks exchange each cycle. Both ends
// are the same build, so fields are written in a fixed order with no tags; the reader checks
// bounds so a truncated message becomes an Error, not a crash.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {

class WireWriter {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void put(const T& value) {
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    put<std::uint32_t>(static_cast<std::uint32_t>(v.size()));
    for (const T& x : v) put(x);
  }
  std::vector<char> take() { return std::move(bytes_); }

 private:
  std::vector<char> bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::vector<char>& bytes) : bytes_(bytes) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T> T get() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  std::string get_string() {
    const auto n = get<std::uint32_t>();
    need(n);
    std::string s(bytes_.data() + offset_, n);
    offset_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> get_vector() {
    const auto n = get<std::uint32_t>();
    need(static_cast<std::size_t>(n) * sizeof(T));
    std::vector<T> v;
    v.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) v.push_back(get<T>());
    return v;
  }
  bool done() const { return offset_ == bytes_.size(); }

 private:
  void need(std::size_t n) const {
    if (offset_ + n > bytes_.size()) throw Error("dtrain: truncated control message from a peer (protocol mismatch?)");
  }
  const std::vector<char>& bytes_;
  std::size_t offset_ = 0;
};

}  // namespace dtrain::runtime
