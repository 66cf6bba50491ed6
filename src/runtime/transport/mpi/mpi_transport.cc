#include "runtime/transport/mpi/mpi_transport.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>

#include "runtime/reduction.h"

namespace dtrain::runtime {
namespace {

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string("dtrain: ") + what + " failed in MPI: " + std::string(text, length));
}

int as_count(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw Error(std::string("dtrain: ") + what + " of " + std::to_string(n) +
                " elements exceeds MPI's int count; split the tensor");
  }
  return static_cast<int>(n);
}

std::vector<int> as_counts(const std::vector<std::size_t>& sizes, const char* what) {
  std::vector<int> counts;
  counts.reserve(sizes.size());
  for (auto n : sizes) counts.push_back(as_count(n, what));
  return counts;
}

std::vector<int> displacements(const std::vector<int>& counts) {
  std::vector<int> displs(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// MPI has no half-precision types: 16-bit types travel as a contiguous pair of bytes and
// are combined by dtrain's own reduction, through one user-defined op per (dtype, op).
struct HalfOps {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op ops[2][5] = {};  // [float16 | bfloat16][ReduceOp]
};

template <DataType D, ReduceOp O>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_elements(D, O, inout, inout, in, static_cast<std::size_t>(*len));
}

template <DataType D>
void create_half_ops(MPI_Op* ops) {
  MPI_Op_create(&half_reduce<D, ReduceOp::kSum>, 1, &ops[0]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kAverage>, 1, &ops[1]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kMin>, 1, &ops[2]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kMax>, 1, &ops[3]);
  MPI_Op_create(&half_reduce<D, ReduceOp::kProduct>, 1, &ops[4]);
}

HalfOps& half_ops() {
  static HalfOps ops = [] {
    HalfOps h;
    MPI_Type_contiguous(2, MPI_BYTE, &h.type);
    MPI_Type_commit(&h.type);
    create_half_ops<DataType::kFloat16>(h.ops[0]);
    create_half_ops<DataType::kBFloat16>(h.ops[1]);
    return h;
  }();
  return ops;
}

MPI_Datatype mpi_type(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kFloat16:
    case DataType::kBFloat16: return half_ops().type;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(DataType dtype, ReduceOp op) {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
    return half_ops().ops[dtype == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
  }
  return MPI_SUM;
}

// The thread level MPI provides: MPI_THREAD_MULTIPLE is asked for, since each process set's
// background thread calls MPI at the same time as the job's.
int ensure_mpi_initialised() {
  static std::once_flag once;
  static int provided = 0;
  std::call_once(once, [] {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) {  // the application did it
      MPI_Query_thread(&provided);
      return;
    }
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      throw Error("dtrain: this MPI provides thread level " + std::to_string(provided) +
                  ", but dtrain's background thread needs MPI_THREAD_SERIALIZED");
    }
    std::atexit([] {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Finalize();
    });
  });
  return provided;
}

}  // namespace

struct MpiTransport::Communicator {
  MPI_Comm comm = MPI_COMM_NULL;
  ~Communicator() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
  }
};

std::unique_ptr<MpiTransport> MpiTransport::connect() {
  ensure_mpi_initialised();
  auto communicator = std::make_unique<Communicator>();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &communicator->comm), "MPI_Comm_dup");
  // Errors come back as codes, which become dtrain::Error, instead of aborting the job.
  MPI_Comm_set_errhandler(communicator->comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiTransport>(new MpiTransport(std::move(communicator)));
}

std::unique_ptr<MpiTransport> MpiTransport::split(int color, int key) const {
  auto communicator = std::make_unique<Communicator>();
  check(MPI_Comm_split(communicator_->comm, color, key, &communicator->comm), "MPI_Comm_split");
  MPI_Comm_set_errhandler(communicator->comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiTransport>(new MpiTransport(std::move(communicator)));
}

bool MpiTransport::threads_multiple() { return ensure_mpi_initialised() >= MPI_THREAD_MULTIPLE; }

std::unique_ptr<MpiTransport> MpiTransport::connect_members(const std::vector<int>& members, const std::string& name,
                                                            const std::string& key) {
  if (ensure_mpi_initialised() < MPI_THREAD_MULTIPLE) {
    throw Error("dtrain: process set " + name + ": this MPI provides thread level " +
                std::to_string(ensure_mpi_initialised()) +
                ", but a process set's background thread calls MPI beside the job's: it needs MPI_THREAD_MULTIPLE");
  }
  MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  check(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  const int included = MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group);
  MPI_Group_free(&world);
  check(included, "MPI_Group_incl");
  auto communicator = std::make_unique<Communicator>();
  // Collective over the members only; the tag keeps apart sets that members create one after
  // the other (they never create two at once).
  const int tag = static_cast<int>(std::hash<std::string>{}(key) % 32768);
  const int created = MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &communicator->comm);
  MPI_Group_free(&group);
  check(created, "MPI_Comm_create_group");
  MPI_Comm_set_errhandler(communicator->comm, MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiTransport>(new MpiTransport(std::move(communicator)));
}

MpiTransport::MpiTransport(std::unique_ptr<Communicator> communicator) : communicator_(std::move(communicator)) {
  MPI_Comm_rank(communicator_->comm, &rank_);
  MPI_Comm_size(communicator_->comm, &size_);
}

MpiTransport::~MpiTransport() = default;

std::vector<std::vector<char>> MpiTransport::gather_to_coordinator(const std::vector<char>& message) {
  int length = as_count(message.size(), "control message");
  std::vector<int> lengths(rank_ == 0 ? size_ : 0);
  check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, communicator_->comm), "MPI_Gather");
  std::vector<int> displs = rank_ == 0 ? displacements(lengths) : std::vector<int>{};
  std::vector<char> all(rank_ == 0 ? static_cast<std::size_t>(displs.back() + lengths.back()) : 0);
  check(MPI_Gatherv(message.data(), length, MPI_BYTE, all.data(), lengths.data(), displs.data(), MPI_BYTE, 0,
                    communicator_->comm),
        "MPI_Gatherv");
  std::vector<std::vector<char>> messages;
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r)
      messages.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + lengths[r]);
  }
  return messages;
}

std::vector<char> MpiTransport::broadcast_from_coordinator(const std::vector<char>& message) {
  int length = rank_ == 0 ? as_count(message.size(), "control message") : 0;
  check(MPI_Bcast(&length, 1, MPI_INT, 0, communicator_->comm), "MPI_Bcast");
  std::vector<char> result = rank_ == 0 ? message : std::vector<char>(static_cast<std::size_t>(length));
  if (length) check(MPI_Bcast(result.data(), length, MPI_BYTE, 0, communicator_->comm), "MPI_Bcast");
  return result;
}

void MpiTransport::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  if (count == 0) return;
  check(MPI_Allreduce(MPI_IN_PLACE, data, as_count(count, "allreduce"), mpi_type(dtype), mpi_op(dtype, op),
                      communicator_->comm),
        "MPI_Allreduce");
}

void MpiTransport::allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) {
  const std::vector<int> counts = as_counts(bytes_per_rank, "allgather");
  const std::vector<int> displs = displacements(counts);
  check(MPI_Allgatherv(input, counts[rank_], MPI_BYTE, output, counts.data(), displs.data(), MPI_BYTE,
                       communicator_->comm),
        "MPI_Allgatherv");
}

void MpiTransport::broadcast(void* data, std::size_t bytes, int root) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {  // MPI counts are ints: large buffers go in pieces
    const std::size_t piece = std::min<std::size_t>(bytes, INT_MAX);
    check(MPI_Bcast(p, static_cast<int>(piece), MPI_BYTE, root, communicator_->comm), "MPI_Bcast");
    p += piece;
    bytes -= piece;
  }
}

void MpiTransport::alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                             const std::vector<std::size_t>& receive_bytes) {
  const std::vector<int> send = as_counts(send_bytes, "alltoall"), receive = as_counts(receive_bytes, "alltoall");
  const std::vector<int> send_displs = displacements(send), receive_displs = displacements(receive);
  check(MPI_Alltoallv(input, send.data(), send_displs.data(), MPI_BYTE, output, receive.data(), receive_displs.data(),
                      MPI_BYTE, communicator_->comm),
        "MPI_Alltoallv");
}

void MpiTransport::reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype,
                                 ReduceOp op) {
  const std::vector<int> counts = as_counts(counts_per_rank, "reducescatter");
  std::size_t total = 0, mine_offset = 0;
  for (int r = 0; r < size_; ++r) {
    if (r < rank_) mine_offset += counts_per_rank[r];
    total += counts_per_rank[r];
  }
  if (total == 0) return;
  // In place, MPI leaves this rank's block at the start of the buffer; move it to its offset.
  check(MPI_Reduce_scatter(MPI_IN_PLACE, data, counts.data(), mpi_type(dtype), mpi_op(dtype, op), communicator_->comm),
        "MPI_Reduce_scatter");
  const std::size_t esize = element_size(dtype);
  if (mine_offset && counts_per_rank[rank_]) {
    auto* bytes = static_cast<char*>(data);
    std::memmove(bytes + mine_offset * esize, bytes, counts_per_rank[rank_] * esize);
  }
}

void MpiTransport::barrier() { check(MPI_Barrier(communicator_->comm), "MPI_Barrier"); }

}  // namespace dtrain::runtime
