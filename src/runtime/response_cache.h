// Remembers the responses of recent operations so steady-state steps skip the full
// negotiation: a rank whose new request equals what it sent when the response was made sets
// that entry's bit instead of sending the request. Every rank applies the same sequence of
// lookups and insertions (the coordinator's plan, in order), so positions agree everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/message.h"

namespace dtrain::runtime {

class ResponseCache {
 public:
  explicit ResponseCache(std::size_t capacity) : capacity_(capacity) {}

  std::size_t capacity() const { return capacity_; }
  std::size_t size() const { return by_name_.size(); }

  // Position of the entry whose request from `request.rank` equals `request`, if any.
  std::optional<std::uint32_t> find(const Request& request) const;

  const Response& response_at(std::uint32_t position) const;
  // Marks an entry recently used; ranks call it for each cached item of a plan they run.
  void touch(std::uint32_t position);

  // Whether a response may be cached: successful, one tensor, of a kind whose result depends
  // only on the requests, and decided with no rank joined.
  static bool cacheable(const Response& response);

  // Stores (or replaces, by name) an entry; evicts the least recently used when full.
  void put(const Response& response);

  void clear();

 private:
  struct Entry {
    Response response;
    std::uint64_t last_used = 0;
    bool occupied = false;
  };
  std::size_t capacity_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, std::uint32_t> by_name_;
  std::uint64_t clock_ = 0;
};

// The request `rank` must have sent for `response` (a single-tensor response carries every
// rank's parameters: allgather's first dimensions and alltoall's splits are in `sizes`).
Request request_for_rank(const Response& response, int rank);

// Sets bit `position` in a little-endian word vector, growing it as needed.
void set_bit(std::vector<std::uint64_t>& bits, std::uint32_t position);
std::vector<std::uint32_t> set_positions(const std::vector<std::uint64_t>& bits);

}  // namespace dtrain::runtime
