#include "runtime/response_builder.h"

#include <functional>
#include <map>
#include <sstream>

namespace dtrain::runtime {
namespace {

std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? "," : "") << ranks[i];
  return out.str();
}

std::string scale_string(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

// If `describe` does not give the same text for every submitting rank, returns
// "<what> differs across ranks: ranks 0,2 have X; rank 1 has Y".
std::string disagreement(const std::vector<const Request*>& requests, const std::vector<int>& rank_names,
                         const char* what, const std::function<std::string(const Request&)>& describe) {
  std::map<std::string, std::vector<int>> ranks_by_value;
  std::vector<std::string> order;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r]) continue;
    std::string value = describe(*requests[r]);
    if (!ranks_by_value.contains(value)) order.push_back(value);
    ranks_by_value[value].push_back(rank_names.empty() ? static_cast<int>(r) : rank_names[r]);
  }
  if (ranks_by_value.size() <= 1) return {};
  std::ostringstream out;
  out << what << " differs across ranks: ";
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& ranks = ranks_by_value[order[i]];
    out << (i ? "; " : "") << rank_list(ranks) << (ranks.size() == 1 ? " has " : " have ") << order[i];
  }
  return out.str();
}

std::vector<std::int64_t> trailing_dims(const Request& r) {
  return r.shape.empty() ? std::vector<std::int64_t>{} : std::vector<std::int64_t>(r.shape.begin() + 1, r.shape.end());
}

}  // namespace

std::int64_t reducescatter_rows(std::int64_t rows, int world_size, int rank) {
  return rows / world_size + (rank < rows % world_size ? 1 : 0);
}

Response build_response(const std::vector<const Request*>& requests, const std::vector<int>& joined_ranks,
                        const std::vector<int>& rank_names) {
  const Request* first = nullptr;
  for (const Request* r : requests) {
    if (r) {
      first = r;
      break;
    }
  }
  Response response;
  response.type = first->type;
  response.names = {first->name};
  response.dtype = first->dtype;
  response.device = first->device;
  response.reduce_op = first->reduce_op;
  response.prescale = first->prescale;
  response.postscale = first->postscale;
  response.root = first->root;
  response.shape = first->shape;
  response.group = first->group;
  response.group_size = first->group_size;
  response.world_size = static_cast<std::int32_t>(requests.size());
  response.joined_ranks.assign(joined_ranks.begin(), joined_ranks.end());

  const std::string prefix = std::string(to_string(first->type)) + " '" + first->name + "': ";
  auto fail = [&](const std::string& message) {
    response.error = prefix + message;
    return response;
  };

  // Checks shared by every operation, then the ones specific to it; the first disagreement wins.
  std::vector<std::pair<const char*, std::function<std::string(const Request&)>>> checks = {
      {"operation", [](const Request& r) { return std::string(to_string(r.type)); }},
      {"dtype", [](const Request& r) { return std::string(to_string(r.dtype)); }},
      {"device", [](const Request& r) { return std::string(to_string(r.device)); }},
      {"group", [](const Request& r) { return r.group + "/" + std::to_string(r.group_size); }},
  };
  switch (first->type) {
    case OpType::kAllreduce:
    case OpType::kReducescatter:
      checks.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
      checks.push_back({"reduce op", [](const Request& r) { return std::string(to_string(r.reduce_op)); }});
      checks.push_back({"prescale factor", [](const Request& r) { return scale_string(r.prescale); }});
      checks.push_back({"postscale factor", [](const Request& r) { return scale_string(r.postscale); }});
      break;
    case OpType::kBroadcast:
      checks.push_back({"shape", [](const Request& r) { return shape_string(r.shape); }});
      checks.push_back({"root rank", [&rank_names](const Request& r) {
                          return std::to_string(rank_names.empty() ? r.root : rank_names.at(r.root));
                        }});
      break;
    case OpType::kAllgather:
    case OpType::kAlltoall:
      checks.push_back({"number of dimensions", [](const Request& r) { return std::to_string(r.shape.size()); }});
      checks.push_back(
          {"shape after the first dimension", [](const Request& r) { return shape_string(trailing_dims(r)); }});
      break;
    case OpType::kBarrier:
    case OpType::kJoin: break;
  }
  for (const auto& [what, describe] : checks) {
    if (std::string message = disagreement(requests, rank_names, what, describe); !message.empty())
      return fail(message);
  }

  if (!joined_ranks.empty()) {
    if (first->type != OpType::kAllreduce && first->type != OpType::kBarrier) {
      return fail("cannot run while " + rank_list(joined_ranks) + " joined; joined ranks take part in allreduce only");
    }
    if (first->type == OpType::kAllreduce && first->reduce_op != ReduceOp::kSum &&
        first->reduce_op != ReduceOp::kAverage) {
      return fail(std::string("reduce op ") + to_string(first->reduce_op) + " cannot run while " +
                  rank_list(joined_ranks) + " joined (joined ranks contribute zeros; use Sum or Average)");
    }
  }

  std::int64_t elements = 1;
  for (auto d : first->shape) elements *= d;
  switch (first->type) {
    case OpType::kAllreduce: response.sizes = {elements}; break;
    case OpType::kAllgather:
      for (const Request* r : requests) response.sizes.push_back(r->shape[0]);
      break;
    case OpType::kAlltoall:
      for (const Request* r : requests) response.sizes.insert(response.sizes.end(), r->splits.begin(), r->splits.end());
      break;
    default: break;
  }
  return response;
}

}  // namespace dtrain::runtime
