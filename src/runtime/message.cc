#include "runtime/message.h"

#include <cctype>
#include <sstream>

#include "runtime/wire.h"

namespace dtrain::runtime {

const char* to_string(OpType type) {
  switch (type) {
    case OpType::kAllreduce: return "allreduce";
    case OpType::kAllgather: return "allgather";
    case OpType::kBroadcast: return "broadcast";
    case OpType::kAlltoall: return "alltoall";
    case OpType::kReducescatter: return "reducescatter";
    case OpType::kBarrier: return "barrier";
    case OpType::kJoin: return "join";
  }
  return "unknown";
}

std::string activity_name(OpType type) {
  std::string name = to_string(type);
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

bool Request::same_parameters(const Request& o) const {
  return type == o.type && name == o.name && dtype == o.dtype && device == o.device && shape == o.shape && reduce_op == o.reduce_op &&
         root == o.root && prescale == o.prescale && postscale == o.postscale && splits == o.splits &&
         group == o.group && group_size == o.group_size;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {

void put_request(WireWriter& w, const Request& r) {
  w.put(r.rank);
  w.put(r.type);
  w.put_string(r.name);
  w.put(r.dtype);
  w.put(r.device);
  w.put_vector(r.shape);
  w.put(r.reduce_op);
  w.put(r.root);
  w.put(r.prescale);
  w.put(r.postscale);
  w.put_vector(r.splits);
  w.put_string(r.group);
  w.put(r.group_size);
}

Request get_request(WireReader& rd) {
  Request r;
  r.rank = rd.get<std::int32_t>();
  r.type = rd.get<OpType>();
  r.name = rd.get_string();
  r.dtype = rd.get<DataType>();
  r.device = rd.get<DeviceType>();
  r.shape = rd.get_vector<std::int64_t>();
  r.reduce_op = rd.get<ReduceOp>();
  r.root = rd.get<std::int32_t>();
  r.prescale = rd.get<double>();
  r.postscale = rd.get<double>();
  r.splits = rd.get_vector<std::int64_t>();
  r.group = rd.get_string();
  r.group_size = rd.get<std::int32_t>();
  return r;
}

void put_response(WireWriter& w, const Response& r) {
  w.put(r.type);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(r.names.size()));
  for (const auto& n : r.names) w.put_string(n);
  w.put_string(r.error);
  w.put(r.dtype);
  w.put(r.device);
  w.put(r.reduce_op);
  w.put(r.prescale);
  w.put(r.postscale);
  w.put(r.root);
  w.put_vector(r.shape);
  w.put_string(r.group);
  w.put(r.group_size);
  w.put(r.world_size);
  w.put_vector(r.sizes);
  w.put_vector(r.joined_ranks);
  w.put(r.last_joined);
}

Response get_response(WireReader& rd) {
  Response r;
  r.type = rd.get<OpType>();
  const auto n = rd.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) r.names.push_back(rd.get_string());
  r.error = rd.get_string();
  r.dtype = rd.get<DataType>();
  r.device = rd.get<DeviceType>();
  r.reduce_op = rd.get<ReduceOp>();
  r.prescale = rd.get<double>();
  r.postscale = rd.get<double>();
  r.root = rd.get<std::int32_t>();
  r.shape = rd.get_vector<std::int64_t>();
  r.group = rd.get_string();
  r.group_size = rd.get<std::int32_t>();
  r.world_size = rd.get<std::int32_t>();
  r.sizes = rd.get_vector<std::int64_t>();
  r.joined_ranks = rd.get_vector<std::int32_t>();
  r.last_joined = rd.get<std::int32_t>();
  return r;
}

}  // namespace

std::vector<char> encode(const CycleReport& report) {
  WireWriter w;
  w.put<std::uint8_t>(report.shutdown);
  w.put_vector(report.cache_bits);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(report.requests.size()));
  for (const auto& r : report.requests) put_request(w, r);
  return w.take();
}

CycleReport decode_report(const std::vector<char>& bytes) {
  WireReader rd(bytes);
  CycleReport report;
  report.shutdown = rd.get<std::uint8_t>() != 0;
  report.cache_bits = rd.get_vector<std::uint64_t>();
  const auto n = rd.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) report.requests.push_back(get_request(rd));
  return report;
}

std::vector<char> encode(const CyclePlan& plan) {
  WireWriter w;
  w.put<std::uint8_t>(plan.shutdown);
  w.put_string(plan.shutdown_reason);
  w.put(plan.fusion_threshold_bytes);
  w.put(plan.cycle_time_ms);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(plan.items.size()));
  for (const auto& item : plan.items) {
    w.put(item.cache_position);
    if (item.cache_position < 0) put_response(w, item.response);
  }
  return w.take();
}

CyclePlan decode_plan(const std::vector<char>& bytes) {
  WireReader rd(bytes);
  CyclePlan plan;
  plan.shutdown = rd.get<std::uint8_t>() != 0;
  plan.shutdown_reason = rd.get_string();
  plan.fusion_threshold_bytes = rd.get<std::uint64_t>();
  plan.cycle_time_ms = rd.get<double>();
  const auto n = rd.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) {
    CyclePlan::Item item;
    item.cache_position = rd.get<std::int32_t>();
    if (item.cache_position < 0) item.response = get_response(rd);
    plan.items.push_back(std::move(item));
  }
  return plan;
}

}  // namespace dtrain::runtime
