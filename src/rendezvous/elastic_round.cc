#include "rendezvous/elastic_round.h"

#include <sstream>

#include <fmt/format.h>

#include "dtrain/error.h"

namespace dtrain::rendezvous {

std::string elastic_join_key(int worker) { return fmt::format("elastic/join/{}", worker); }
std::string elastic_round_key(int round) { return fmt::format("elastic/round/{}", round); }

std::optional<int> ElasticRound::rank_of(int worker) const {
  for (std::size_t rank = 0; rank < members.size(); ++rank) {
    if (members[rank].worker == worker) return static_cast<int>(rank);
  }
  return std::nullopt;
}

std::string encode_round(const ElasticRound& round) {
  if (!round.closed_reason.empty()) return "closed " + round.closed_reason;
  std::string text = fmt::format("round {} size {}\n", round.number, round.size());
  for (const auto& member : round.members) text += fmt::format("{} {}\n", member.worker, member.host);
  return text;
}

ElasticRound decode_round(int number, const std::string& text) {
  ElasticRound round;
  round.number = number;
  if (text.starts_with("closed ")) {
    round.closed_reason = text.substr(7);
    return round;
  }
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("dtrain: elastic round {} in the rendezvous store is malformed: {}", number, what));
  };
  std::istringstream in(text);
  std::string word_round, word_size;
  int header_number = 0, size = 0;
  if (!(in >> word_round >> header_number >> word_size >> size) || word_round != "round" || word_size != "size") {
    throw bad("no 'round N size S' header");
  }
  if (header_number != number) throw bad(fmt::format("its header says round {}", header_number));
  if (size < 1) throw bad(fmt::format("size {}", size));
  for (int rank = 0; rank < size; ++rank) {
    ElasticMember member;
    if (!(in >> member.worker >> member.host)) throw bad(fmt::format("rank {} of {} is missing", rank, size));
    if (round.rank_of(member.worker)) throw bad(fmt::format("worker {} is listed twice", member.worker));
    round.members.push_back(std::move(member));
  }
  return round;
}

}  // namespace dtrain::rendezvous
