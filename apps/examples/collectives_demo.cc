// Shows every collective at work: run it under `dtrain run -np 4`. Each rank prints its
// place in the job and what each operation gave it; all ranks check the results agree
// with what the arithmetic says they must be, and the program fails if not.
#include <cstdio>
#include <numeric>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "dtrain/dtrain.h"

namespace {

template <typename T>
std::string join(const T* data, std::int64_t n) {
  std::ostringstream out;
  out << '[';
  for (std::int64_t i = 0; i < n; ++i) out << (i ? " " : "") << data[i];
  out << ']';
  return out.str();
}

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: WRONG RESULT: %s\n", dtrain::rank(), what.c_str());
    ++failures;
  }
}

int show_every_collective() {
  dtrain::init();
  const int rank = dtrain::rank();
  const int size = dtrain::size();
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::printf("rank %d of %d on host %s (local rank %d of %d, cross rank %d of %d)\n", rank, size, host,
              dtrain::local_rank(), dtrain::local_size(), dtrain::cross_rank(), dtrain::cross_size());

  // allreduce: every rank contributes (rank + 1) * [1, 2, 3, 4]; Sum and Average.
  std::vector<float> grad = {1, 2, 3, 4};
  for (auto& g : grad) g *= static_cast<float>(rank + 1);
  std::vector<float> summed(4), averaged(4);
  auto h1 = dtrain::allreduce_async("grad.sum", {grad.data(), dtrain::DataType::kFloat32, {4}},
                                    {summed.data(), dtrain::DataType::kFloat32, {4}}, {dtrain::ReduceOp::kSum});
  auto h2 = dtrain::allreduce_async("grad.avg", {grad.data(), dtrain::DataType::kFloat32, {4}},
                                    {averaged.data(), dtrain::DataType::kFloat32, {4}});
  h1.wait();
  h2.wait();
  const float ranks_sum = size * (size + 1) / 2.0f;
  expect(summed[3] == 4 * ranks_sum, "allreduce sum");
  expect(averaged[0] == ranks_sum / size, "allreduce average");
  std::printf("rank %d: allreduce Sum %s, Average %s\n", rank, join(summed.data(), 4).c_str(),
              join(averaged.data(), 4).c_str());

  // allgather: rank r contributes r + 1 rows holding r.
  std::vector<std::int32_t> rows(rank + 1, rank);
  auto gathered = dtrain::allgather("rows", {rows.data(), dtrain::DataType::kInt32, {rank + 1}});
  const auto out = gathered.output();
  expect(out.shape[0] == size * (size + 1) / 2, "allgather rows");
  std::printf("rank %d: allgather %s\n", rank, join(static_cast<const std::int32_t*>(out.data), out.shape[0]).c_str());

  // broadcast from the last rank.
  std::int64_t token = rank == size - 1 ? 4242 : -1;
  dtrain::broadcast("token", {&token, dtrain::DataType::kInt64, {1}}, size - 1);
  expect(token == 4242, "broadcast");
  std::printf("rank %d: broadcast from rank %d -> %lld\n", rank, size - 1, static_cast<long long>(token));

  // alltoall: rank r sends the value 100*r + j to rank j.
  std::vector<std::int32_t> send(size);
  for (int j = 0; j < size; ++j) send[j] = 100 * rank + j;
  auto exchanged = dtrain::alltoall("exchange", {send.data(), dtrain::DataType::kInt32, {size}});
  const auto* received = static_cast<const std::int32_t*>(exchanged.output().data);
  for (int j = 0; j < size; ++j) expect(received[j] == 100 * j + rank, "alltoall");
  std::printf("rank %d: alltoall received %s\n", rank, join(received, size).c_str());

  // reducescatter: every rank contributes [0, 1, ..., 2*size-1]; rank r keeps rows 2r, 2r+1 summed.
  std::vector<double> all(2 * size);
  std::iota(all.begin(), all.end(), 0.0);
  auto scattered =
      dtrain::reducescatter("shards", {all.data(), dtrain::DataType::kFloat64, {2 * size}}, {dtrain::ReduceOp::kSum});
  const auto* shard = static_cast<const double*>(scattered.output().data);
  expect(shard[0] == 2.0 * rank * size && shard[1] == (2.0 * rank + 1) * size, "reducescatter");
  std::printf("rank %d: reducescatter shard %s\n", rank, join(shard, scattered.output().shape[0]).c_str());

  dtrain::barrier();
  const int last = dtrain::join();
  std::printf("rank %d: joined; last to join was rank %d\n", rank, last);
  dtrain::shutdown();
  if (failures) return 1;
  std::printf("rank %d: all collectives correct\n", rank);
  return 0;
}

}  // namespace

int main() {
  try {
    return show_every_collective();
  } catch (const dtrain::Error& e) {
    // A failed init or collective: one line, as every dtrain program reports it.
    std::fprintf(stderr, "dtrain-collectives-demo: %s\n", e.what());
    return 1;
  }
}
