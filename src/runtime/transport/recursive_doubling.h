// Recursive doubling: the schedule of an allreduce of a small message in about log2(n) steps,
// each rank exchanging its partial result with one partner per step (partner = rank XOR 2^k).
// When n is not a power of two, each rank past the largest power p first hands its message to
// rank - p, which combines it in before the steps and sends the result back after them.
// Rules only, no I/O: the TCP mesh runs it (MeshTransport::reduce_summaries) and the
// negotiation simulator replays it (bench/negotiation). Every rank ends with the same result
// when the combination is associative, commutative and exact (the summaries' AND and OR are).
#pragma once

#include <cstddef>
#include <vector>

namespace dtrain::runtime {

struct DoublingSchedule {
  int handed_from = -1;       // a rank past p whose message this rank combines first; -1: none
  int hands_to = -1;          // for a rank past p: who combines its message and sends back the result
  std::vector<int> partners;  // one per step; none for a rank past p
};

inline DoublingSchedule doubling_schedule(int rank, int size) {
  int power = 1;
  while (power * 2 <= size) power *= 2;
  DoublingSchedule schedule;
  if (rank >= power) {
    schedule.hands_to = rank - power;
    return schedule;
  }
  if (rank + power < size) schedule.handed_from = rank + power;
  for (int distance = 1; distance < power; distance *= 2) schedule.partners.push_back(rank ^ distance);
  return schedule;
}

// Every rank's result of the schedule, all ranks in one process (what the simulator and the
// tests replay; the mesh runs it over sockets): `partial[r]` starts as rank r's message, and
// `combine(r, partial[r], theirs)` combines into rank r's partial each message it receives, in
// the order the schedule delivers them. A rank past the largest power gets its partner's
// result at the end.
template <typename Message, typename Combine>
std::vector<Message> replay_doubling(std::vector<Message> partial, Combine combine) {
  const int size = static_cast<int>(partial.size());
  std::vector<DoublingSchedule> schedules;
  for (int r = 0; r < size; ++r) schedules.push_back(doubling_schedule(r, size));
  const auto at = [](auto& v, int r) -> auto& { return v[static_cast<std::size_t>(r)]; };
  for (int r = 0; r < size; ++r) {
    if (const int to = at(schedules, r).hands_to; to >= 0) combine(to, at(partial, to), at(partial, r));
  }
  const std::size_t steps = size > 0 ? schedules[0].partners.size() : 0;
  for (std::size_t step = 0; step < steps; ++step) {
    const std::vector<Message> before = partial;  // every rank sends what it held before the step
    for (int r = 0; r < size; ++r) {
      if (at(schedules, r).hands_to < 0) combine(r, at(partial, r), at(before, at(schedules, r).partners[step]));
    }
  }
  for (int r = 0; r < size; ++r) {
    if (const int to = at(schedules, r).hands_to; to >= 0) at(partial, r) = at(partial, to);
  }
  return partial;
}

}  // namespace dtrain::runtime
