#include "ps/shard_plan.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "ps/ps_error.h"

namespace dtrain::ps {

ShardPlan::ShardPlan(const std::vector<ParameterSize>& parameters, int servers, std::int64_t max_piece_elements)
    : servers_(servers) {
  if (servers < 1) throw PsError(fmt::format("parameter servers: need at least one server, got {}", servers));
  std::int64_t total = 0;
  for (const auto& p : parameters) {
    if (p.elements <= 0) throw PsError(fmt::format("parameter servers: parameter '{}' is empty", p.name));
    total += p.elements;
  }
  const std::int64_t share = std::max<std::int64_t>(1, std::min((total + servers - 1) / servers, max_piece_elements));

  by_parameter_.resize(parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    const std::int64_t n = parameters[i].elements;
    const std::int64_t parts = (n + share - 1) / share;
    for (std::int64_t k = 0; k < parts; ++k) {
      Piece piece;
      piece.name = fmt::format("{}#{}", parameters[i].name, k);
      piece.parameter = static_cast<int>(i);
      piece.offset = n * k / parts;
      piece.elements = n * (k + 1) / parts - piece.offset;
      by_parameter_[i].push_back(static_cast<int>(pieces_.size()));
      pieces_.push_back(std::move(piece));
    }
  }

  std::vector<int> order(pieces_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [this](int a, int b) { return pieces_[a].elements > pieces_[b].elements; });
  std::vector<std::int64_t> load(servers, 0);
  for (int index : order) {
    const int server = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    pieces_[index].server = server;
    load[server] += pieces_[index].elements;
  }
}

std::vector<int> ShardPlan::pieces_on_server(int server) const {
  std::vector<int> indices;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    if (pieces_[i].server == server) indices.push_back(static_cast<int>(i));
  }
  return indices;
}

std::int64_t ShardPlan::elements_on_server(int server) const {
  std::int64_t n = 0;
  for (const auto& p : pieces_) {
    if (p.server == server) n += p.elements;
  }
  return n;
}

}  // namespace dtrain::ps
