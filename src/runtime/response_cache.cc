#include "runtime/response_cache.h"

#include <bit>

namespace dtrain::runtime {

std::optional<std::uint32_t> ResponseCache::find(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return std::nullopt;
  const Entry& entry = entries_[it->second];
  if (!request_for_rank(entry.response, request.rank).same_parameters(request)) return std::nullopt;
  return it->second;
}

const Response& ResponseCache::response_at(std::uint32_t position) const {
  if (position >= entries_.size() || !entries_[position].occupied) {
    throw Error("dtrain: response cache out of sync across ranks (position " + std::to_string(position) + ")");
  }
  return entries_[position].response;
}

void ResponseCache::touch(std::uint32_t position) {
  response_at(position);
  entries_[position].last_used = ++clock_;
}

Request request_for_rank(const Response& response, int rank) {
  Request r;
  r.rank = rank;
  r.type = response.type;
  r.name = response.names.front();
  r.dtype = response.dtype;
  r.device = response.device;
  r.shape = response.shape;
  r.reduce_op = response.reduce_op;
  r.root = response.root;
  r.prescale = response.prescale;
  r.postscale = response.postscale;
  r.group = response.group;
  r.group_size = response.group_size;
  const auto world = static_cast<std::size_t>(response.world_size);
  if (response.type == OpType::kAllgather && static_cast<std::size_t>(rank) < response.sizes.size()) {
    r.shape[0] = response.sizes[rank];
  } else if (response.type == OpType::kAlltoall && response.sizes.size() == world * world) {
    r.splits.assign(response.sizes.begin() + rank * world, response.sizes.begin() + (rank + 1) * world);
    std::int64_t rows = 0;
    for (auto s : r.splits) rows += s;
    r.shape[0] = rows;
  }
  return r;
}

bool ResponseCache::cacheable(const Response& response) {
  if (!response.ok() || response.names.size() != 1 || !response.joined_ranks.empty()) return false;
  switch (response.type) {
    case OpType::kAllreduce:
    case OpType::kAllgather:
    case OpType::kBroadcast:
    case OpType::kAlltoall:
    case OpType::kReducescatter: return true;
    default: return false;
  }
}

void ResponseCache::put(const Response& response) {
  if (capacity_ == 0) return;
  const std::string& name = response.names.front();
  std::uint32_t position;
  if (auto it = by_name_.find(name); it != by_name_.end()) {
    position = it->second;
  } else if (entries_.size() < capacity_) {
    position = static_cast<std::uint32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    position = 0;
    for (std::uint32_t p = 1; p < entries_.size(); ++p) {
      if (entries_[p].last_used < entries_[position].last_used) position = p;
    }
    by_name_.erase(entries_[position].response.names.front());
  }
  Entry& entry = entries_[position];
  entry.response = response;
  entry.last_used = ++clock_;
  entry.occupied = true;
  by_name_[name] = position;
}

void ResponseCache::clear() {
  entries_.clear();
  by_name_.clear();
  clock_ = 0;
}

void set_bit(std::vector<std::uint64_t>& bits, std::uint32_t position) {
  const std::size_t word = position / 64;
  if (bits.size() <= word) bits.resize(word + 1, 0);
  bits[word] |= std::uint64_t{1} << (position % 64);
}

std::vector<std::uint32_t> set_positions(const std::vector<std::uint64_t>& bits) {
  std::vector<std::uint32_t> positions;
  for (std::size_t w = 0; w < bits.size(); ++w) {
    std::uint64_t word = bits[w];
    while (word) {
      const int b = std::countr_zero(word);
      positions.push_back(static_cast<std::uint32_t>(w * 64 + b));
      word &= word - 1;
    }
  }
  return positions;
}

}  // namespace dtrain::runtime
