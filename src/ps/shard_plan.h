#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::ps {

// A contiguous range of one flattened parameter, held by one server.
struct Piece {
  std::string name;         // "<parameter>#<k>": unique on its server
  int parameter = 0;        // index into the planned parameter list
  std::int64_t offset = 0;  // first element within the flattened parameter
  std::int64_t elements = 0;
  int server = 0;
};

struct ParameterSize {
  std::string name;
  std::int64_t elements = 0;
};

// Which server holds which part of which parameter. Every worker computes the
// same plan from the same parameter list, so no one has to distribute it.
// Parameters larger than an even share (total / servers), or than
// `max_piece_elements`, are cut into near-equal pieces no larger than that; the
// pieces then go, largest
// first, to the server holding the fewest elements so far (lowest index on a
// tie). Each server ends within one piece of an equal share.
class ShardPlan {
 public:
  // 1 M elements (4 MB): large tensors travel as several requests in flight at once,
  // which the servers can apply in parallel, instead of one 50 MB message.
  static constexpr std::int64_t kMaxPieceElements = 1 << 20;

  ShardPlan(const std::vector<ParameterSize>& parameters, int servers,
            std::int64_t max_piece_elements = kMaxPieceElements);

  int servers() const { return servers_; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  // Indices into pieces() of one parameter's pieces, in offset order.
  const std::vector<int>& pieces_of_parameter(int parameter) const { return by_parameter_[parameter]; }
  // Indices into pieces() held by one server, in plan order.
  std::vector<int> pieces_on_server(int server) const;
  std::int64_t elements_on_server(int server) const;

 private:
  int servers_;
  std::vector<Piece> pieces_;
  std::vector<std::vector<int>> by_parameter_;
};

}  // namespace dtrain::ps
