// The elastic protocol on top of the rendezvous store: how the launcher's elastic driver and
// the ranks of an elastic job agree on who is in the world. Keys and values are plain text, so
// a person can read them with curl while a job runs.
//
//   elastic/join/<worker>   worker -> driver: the last round this worker belonged to (0: none);
//                           written when it wants a newer round (at start, after a lost peer,
//                           or when asked to take in new workers)
//   elastic/round           driver -> workers: the newest round's number; written after its
//                           assignment, so a reader that sees N finds elastic/round/N complete
//   elastic/round/<N>       driver -> workers: the assignment of round N (ElasticRound below),
//                           or "closed <reason>" when no more rounds will be formed
//   elastic/pending         driver -> rank 0: how many started workers wait to join; rank 0
//                           reads it at each commit and tells the others (State::commit)
//
// Invariants: rounds count up from 1; a round lists each worker once with ranks 0..size-1 in
// order; workers of the previous round come first in their old order (so the new rank 0 is
// the lowest surviving rank, whose state State::sync hands to the others), new workers after.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtrain::rendezvous {

inline constexpr const char* kElasticRoundKey = "elastic/round";
inline constexpr const char* kElasticPendingKey = "elastic/pending";
std::string elastic_join_key(int worker);
std::string elastic_round_key(int round);

struct ElasticMember {
  int worker = 0;  // the launcher's number for the process, fixed for its life
  std::string host;
};

struct ElasticRound {
  int number = 0;
  std::vector<ElasticMember> members;  // index = rank in this round
  std::string closed_reason;           // non-empty: no world; the job is ending

  int size() const { return static_cast<int>(members.size()); }
  // This worker's rank in the round, if it is a member.
  std::optional<int> rank_of(int worker) const;
};

// "round N size S\n" then one "worker host" line per rank; "closed <reason>" for a closed one.
std::string encode_round(const ElasticRound& round);
// Throws dtrain::Error naming the line when `text` is not an encoded round.
ElasticRound decode_round(int number, const std::string& text);

}  // namespace dtrain::rendezvous
