// Recursive doubling: the schedule of an allreduce of a small message in about log2(n) steps,
// each rank exchanging its partial result with one partner per step (partner = rank XOR 2^k).
// When n is not a power of two, each rank past the largest power p first hands its message to
// rank - p, which combines it in before the steps and sends the result back after them.
// Rules only, no I/O: the TCP mesh runs it (MeshTransport::reduce_summaries) and the
// negotiation simulator replays it (bench/negotiation). Every rank ends with the same result
// when the combination is associative, commutative and exact (the summaries' AND and OR are).
#pragma once

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

}  // namespace dtrain::runtime
