// Collectives over Open MPI, for workers started by mpirun (or `dtrain run --mpi`). MPI is
// initialised once per process and finalised at exit: MPI cannot be initialised twice, so
// each dtrain::init() works on its own duplicate of MPI_COMM_WORLD instead.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class MpiTransport final : public Transport {
 public:
  // Initialises MPI on first use (thread level: multiple where MPI offers it, for process
  // sets; serialized at least, since one background thread calls MPI per world) and
  // duplicates MPI_COMM_WORLD.
  static std::unique_ptr<MpiTransport> connect();
  // Process set `name`'s communicator: `members` (ranks of MPI_COMM_WORLD, ascending),
  // collective over them alone; `key` tells this creation from the members' others. Throws
  // where MPI lacks MPI_THREAD_MULTIPLE.
  static std::unique_ptr<MpiTransport> connect_members(const std::vector<int>& members, const std::string& name,
                                                       const std::string& key);
  // Whether MPI runs with MPI_THREAD_MULTIPLE, which process sets need (initialises MPI).
  static bool threads_multiple();
  // The ranks of this communicator with the same `color`, ordered by `key` (collective over it).
  std::unique_ptr<MpiTransport> split(int color, int key) const;
  ~MpiTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message) override;
  std::vector<char> broadcast_from_coordinator(const std::vector<char>& message) override;
  void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) override;
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) override;
  void broadcast(void* data, std::size_t bytes, int root) override;
  void alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                 const std::vector<std::size_t>& receive_bytes) override;
  void reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype, ReduceOp op) override;
  void barrier() override;

 private:
  struct Communicator;
  explicit MpiTransport(std::unique_ptr<Communicator> communicator);
  std::unique_ptr<Communicator> communicator_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace dtrain::runtime
