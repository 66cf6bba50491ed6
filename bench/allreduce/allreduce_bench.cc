// dtrain-bench allreduce: float32 allreduce from 4 KiB to 256 MiB, measured in one run on the
// same ranks for dtrain (the full runtime, and its data path alone), Open MPI's MPI_Allreduce
// and Gloo's ring allreduce called directly; plus single-core memcpy bandwidth, and the 161
// gradient tensors of ResNet-50 fused by the runtime against one allreduce of the same bytes
// and against 161 unfused allreduces; and a barrier as training meets it (the ranks arrive
// from computing, one last) through dtrain, its transport, Open MPI and Gloo. Run it under
// mpirun so MPI is a live peer:
//
//   dtrain run --mpi -np 2 -- build/apps/dtrain-bench allreduce [--json FILE]
//
// Gloo needs a rendezvous of its own: ranks meet through files in --gloo-dir (a directory all
// ranks see; the default is under /tmp, which serves every rank of one machine). Started by
// plain `dtrain run` (e.g. across network-namespace hosts, bench/allreduce/netns-hosts) it
// measures everything but the Open MPI peer.
//
// Across hosts the yardstick is the wire itself: a plain TCP round trip of 4 KiB between rank 0
// and rank 1 (blocking sockets, TCP_NODELAY), measured in the same run and printed first.
#include <mpi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "dtrain/dtrain.h"
#include "bench/allreduce/resnet50_gradients.h"
#include "bench/busy_compute.h"
#include "runtime/environment.h"
#include "runtime/transport/tcp/bind_address.h"
#include "runtime/transport/transport_factory.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string json;
  std::string gloo_dir;
  std::size_t max_bytes = 256u << 20;
  double seconds_per_size = 0.5;  // time budget per size and peer (at least 3 iterations)
  bool skip_resnet50 = false;
};

// Seconds per call of `op`, the slowest rank's view. Rank 0 picks an iteration count that fits
// the budget from a probe of doubling length (at least 5% of the budget), so the timed loop
// itself holds no synchronisation. One call alone would be a poor probe: the first after a
// pause may wait milliseconds for a peer still finishing the previous measurement, and the
// count it gives (and with it the weight of a rare slow call in the mean) would be random.
double time_per_op(const std::function<void()>& op, double budget_s, int min_iterations = 3) {
  constexpr std::int64_t kMaxIterations = 100000;
  op();  // warm up: first-touch pages, caches, connections
  std::int64_t probe = 1;
  double probe_s = 0;
  while (true) {
    const auto probe_start = Clock::now();
    for (std::int64_t i = 0; i < probe; ++i) op();
    probe_s = std::chrono::duration<double>(Clock::now() - probe_start).count();
    std::int64_t longer = probe_s < 0.05 * budget_s && probe < kMaxIterations / 2 ? 1 : 0;
    dtrain::broadcast("bench.probe", {&longer, dtrain::DataType::kInt64, {1}}, 0);
    if (longer == 0) break;
    probe *= 2;
  }
  const double estimate = std::max(probe_s / static_cast<double>(probe), 1e-7);
  std::int64_t iterations = std::max<std::int64_t>(min_iterations, static_cast<std::int64_t>(budget_s / estimate));
  iterations = std::min(iterations, kMaxIterations);
  dtrain::broadcast("bench.iterations", {&iterations, dtrain::DataType::kInt64, {1}}, 0);
  dtrain::barrier();
  const auto start = Clock::now();
  for (std::int64_t i = 0; i < iterations; ++i) op();
  double per_op = std::chrono::duration<double>(Clock::now() - start).count() / static_cast<double>(iterations);
  dtrain::allreduce("bench.slowest", {&per_op, dtrain::DataType::kFloat64, {1}},
                    {&per_op, dtrain::DataType::kFloat64, {1}}, {dtrain::ReduceOp::kMax});
  return per_op;
}

double memcpy_bandwidth() {
  std::vector<char> a(64u << 20, 1), b(64u << 20, 2);
  std::memcpy(b.data(), a.data(), a.size());
  const auto start = Clock::now();
  const int reps = 8;
  for (int i = 0; i < reps; ++i) std::memcpy(i % 2 ? a.data() : b.data(), i % 2 ? b.data() : a.data(), a.size());
  return static_cast<double>(a.size()) * reps / std::chrono::duration<double>(Clock::now() - start).count();
}

std::shared_ptr<gloo::Context> gloo_context(const std::string& dir, const std::string& iface) {
  std::filesystem::create_directories(dir);
  gloo::rendezvous::FileStore store(dir);
  gloo::transport::tcp::attr attr;
  if (iface.empty()) {
    attr.hostname = "127.0.0.1";
  } else {
    attr.iface = iface;  // hosts in network namespaces reach each other only there
  }
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(dtrain::rank(), dtrain::size());
  context->connectFullMesh(store, device);
  return context;
}

void gloo_ring_allreduce(const std::shared_ptr<gloo::Context>& context, float* data, std::size_t count) {
  gloo::AllreduceOptions opts(context);
  opts.setOutput(data, count);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setReduceFunction([](void* c, const void* a, const void* b, std::size_t n) {
    auto* out = static_cast<float*>(c);
    const auto* x = static_cast<const float*>(a);
    const auto* y = static_cast<const float*>(b);
    for (std::size_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
  });
  static std::uint32_t tag = 0;
  opts.setTag(tag++);
  gloo::allreduce(opts);
}

void gloo_barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions opts(context);
  static std::uint32_t tag = 0;
  opts.setTag(tag++);
  gloo::barrier(opts);
}

void send_all(int fd, const char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::send(fd, data, bytes, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("TCP round trip: send failed");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

void receive_all(int fd, char* data, std::size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, data, bytes, 0);
    if (n <= 0) throw std::runtime_error("TCP round trip: receive failed");
    data += n;
    bytes -= static_cast<std::size_t>(n);
  }
}

// Seconds per round trip of `bytes` over one plain TCP connection between rank 0 (which sends
// and waits for the echo) and rank 1 (which echoes), blocking sockets with TCP_NODELAY, on the
// address Gloo's peer uses below. The other ranks only join the timing's collectives.
double tcp_round_trip(const std::string& address, std::size_t bytes, double budget_s, int rank) {
  int listener = -1, fd = -1;
  sockaddr_in endpoint{};
  endpoint.sin_family = AF_INET;
  ::inet_pton(AF_INET, address.c_str(), &endpoint.sin_addr);
  std::int64_t where[2] = {0, 0};  // rank 0's IPv4 address and port, in network byte order
  if (rank == 0) {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    socklen_t length = sizeof(endpoint);
    if (::bind(listener, reinterpret_cast<sockaddr*>(&endpoint), length) != 0 || ::listen(listener, 1) != 0) {
      throw std::runtime_error("TCP round trip: cannot listen on " + address);
    }
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&endpoint), &length);
    where[0] = endpoint.sin_addr.s_addr;
    where[1] = endpoint.sin_port;
  }
  dtrain::broadcast("bench.tcp_endpoint", {where, dtrain::DataType::kInt64, {2}}, 0);
  if (rank == 1) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    endpoint.sin_addr.s_addr = static_cast<in_addr_t>(where[0]);
    endpoint.sin_port = static_cast<in_port_t>(where[1]);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&endpoint), sizeof(endpoint)) != 0) {
      throw std::runtime_error("TCP round trip: cannot connect to rank 0");
    }
  } else if (rank == 0) {
    fd = ::accept(listener, nullptr, nullptr);
    ::close(listener);
  }
  const int on = 1;
  if (fd >= 0) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  std::vector<char> message(bytes, 'x');
  const double seconds = time_per_op(
      [&] {
        if (rank == 0) {
          send_all(fd, message.data(), bytes);
          receive_all(fd, message.data(), bytes);
        } else if (rank == 1) {
          receive_all(fd, message.data(), bytes);
          send_all(fd, message.data(), bytes);
        }
      },
      budget_s);
  if (fd >= 0) ::close(fd);
  return seconds;
}

// Mean seconds rank 0 spends in `barrier` when it arrives last: every rank computes for 20 ms
// first, rank 0 for 1 ms longer. What a step's end costs the slowest rank.
double last_arrival_barrier(const std::function<void()>& barrier, int rank) {
  constexpr int kIterations = 50;
  barrier();
  double total_s = 0;
  for (int i = 0; i < kIterations; ++i) {
    dtrain::bench::compute_for(rank == 0 ? 21 : 20);
    const auto start = Clock::now();
    barrier();
    total_s += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return total_s / kIterations;
}

std::string human_bytes(std::size_t bytes) {
  char text[32];
  if (bytes >= (1u << 20)) {
    std::snprintf(text, sizeof(text), "%zu MiB", bytes >> 20);
  } else {
    std::snprintf(text, sizeof(text), "%zu KiB", bytes >> 10);
  }
  return text;
}

// ResNet-50's gradients: fused by the runtime, as one tensor, and one by one.
void resnet50_gradients(int rank, int n, const std::function<void(const std::string&)>& emit) {
  const auto shapes = dtrain::bench::resnet50_gradient_shapes();
  std::vector<std::vector<float>> gradients;
  std::size_t total = 0;
  for (const auto& shape : shapes) {
    const auto elements =
        static_cast<std::size_t>(std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>()));
    gradients.emplace_back(elements, 0.5f);
    total += elements;
  }
  auto view_of = [&](std::size_t k) {
    return dtrain::TensorView{gradients[k].data(), dtrain::DataType::kFloat32, shapes[k]};
  };
  const double t_fused = time_per_op(
      [&] {
        std::vector<dtrain::Handle> handles;
        for (std::size_t k = 0; k < shapes.size(); ++k) {
          handles.push_back(dtrain::allreduce_async("resnet50." + std::to_string(k), view_of(k), view_of(k),
                                                    {dtrain::ReduceOp::kSum}));
        }
        for (auto& h : handles) h.wait();
      },
      2.0);
  std::vector<float> flat(total, 0.5f);
  const dtrain::TensorView flat_view{flat.data(), dtrain::DataType::kFloat32, {static_cast<std::int64_t>(total)}};
  const double t_single =
      time_per_op([&] { dtrain::allreduce("resnet50.flat", flat_view, flat_view, {dtrain::ReduceOp::kSum}); }, 2.0);
  const double t_unfused = time_per_op(
      [&] {
        for (std::size_t k = 0; k < shapes.size(); ++k) {
          dtrain::allreduce("resnet50.one." + std::to_string(k), view_of(k), view_of(k), {dtrain::ReduceOp::kSum});
        }
      },
      2.0);
  if (rank == 0) {
    std::printf("\nResNet-50 gradients: %zu tensors, %.1f MiB\n", shapes.size(), total * 4.0 / (1 << 20));
    std::printf("  fused by the runtime:           %8.2f ms  (%.2fx one allreduce of the same bytes)\n", t_fused * 1e3,
                t_fused / t_single);
    std::printf("  one allreduce of the same bytes: %8.2f ms\n", t_single * 1e3);
    std::printf("  161 unfused allreduces:          %8.2f ms  (%.2fx)\n", t_unfused * 1e3, t_unfused / t_single);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "{\"bench\":\"resnet50_gradients\",\"ranks\":%d,\"tensors\":%zu,\"bytes\":%zu,\"fused_s\":%.9g,"
                  "\"single_s\":%.9g,\"unfused_s\":%.9g}",
                  n, shapes.size(), total * 4, t_fused, t_single, t_unfused);
    emit(line);
  }
}

// A barrier as training meets it (last_arrival_barrier) through each peer.
void barriers(int rank, int n, bool with_mpi, dtrain::runtime::Transport& data_path,
              const std::shared_ptr<gloo::Context>& gloo, const std::function<void(const std::string&)>& emit) {
  const double b_runtime = last_arrival_barrier([] { dtrain::barrier(); }, rank);
  const double b_data = last_arrival_barrier([&] { data_path.barrier(); }, rank);
  const double b_mpi = with_mpi ? last_arrival_barrier([] { MPI_Barrier(MPI_COMM_WORLD); }, rank) : 0.0;
  const double b_gloo = last_arrival_barrier([&] { gloo_barrier(gloo); }, rank);
  if (rank == 0) {
    std::printf("\nBarrier, rank 0 arriving last (1 ms after the others, all from 20 ms of computing): its wait\n");
    std::printf("  dtrain runtime %.1f us, dtrain transport %.1f us, Gloo %.1f us", b_runtime * 1e6, b_data * 1e6,
                b_gloo * 1e6);
    if (with_mpi) std::printf(", Open MPI %.1f us", b_mpi * 1e6);
    std::printf("\n");
    char line[256];
    std::snprintf(
        line, sizeof(line),
        "{\"bench\":\"barrier_last_arrival\",\"ranks\":%d,\"dtrain_runtime_s\":%.9g,\"dtrain_transport_s\":%.9g,"
        "\"mpi_s\":%.9g,\"gloo_s\":%.9g}",
        n, b_runtime, b_data, b_mpi, b_gloo);
    emit(line);
  }
}

int run(const Options& options) {
  dtrain::init();
  const int rank = dtrain::rank(), n = dtrain::size();
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;

  // The data path alone: the transport dtrain::init() chose, connected a second time.
  dtrain::runtime::RuntimeConfig config = dtrain::runtime::read_config_from_environment();
  auto data_path = dtrain::runtime::connect_transport(config, 1000);
  const std::string gloo_dir = !options.gloo_dir.empty() ? options.gloo_dir
                               : std::getenv("DTRAIN_JOB_ID")
                                   ? std::string("/tmp/dtrain-bench-gloo-") + std::getenv("DTRAIN_JOB_ID")
                                   : "/tmp/dtrain-bench-gloo-" + std::to_string(getppid());  // mpirun: the local daemon
  auto gloo = gloo_context(gloo_dir, config.iface);
  const bool with_mpi = config.launched_by_mpirun;

  const double round_trip_s =
      n > 1 ? tcp_round_trip(config.iface.empty() ? "127.0.0.1" : dtrain::runtime::bind_address(config.iface, ""), 4096,
                             options.seconds_per_size, rank)
            : 0.0;
  double memcpy_bps = 0;
  if (rank == 0) memcpy_bps = memcpy_bandwidth();
  dtrain::broadcast("bench.memcpy", {&memcpy_bps, dtrain::DataType::kFloat64, {1}}, 0);

  std::FILE* json = nullptr;
  if (rank == 0 && !options.json.empty()) json = std::fopen(options.json.c_str(), "a");
  auto emit = [&](const std::string& line) {
    if (json) std::fprintf(json, "%s\n", line.c_str());
  };
  if (rank == 0) {
    std::printf(
        "allreduce float32 on %d ranks, %d host(s) (%s); single-core memcpy %.2f GB/s; busbw = algbw * 2(n-1)/n\n", n,
        config.cross_size, with_mpi ? "mpirun" : "dtrain run: no Open MPI peer", memcpy_bps / 1e9);
    std::printf("TCP round trip of 4 KiB, rank 0 to rank 1 and back (blocking sockets, TCP_NODELAY): %.1f us\n",
                round_trip_s * 1e6);
    char line[160];
    std::snprintf(line, sizeof(line),
                  "{\"bench\":\"tcp_round_trip\",\"ranks\":%d,\"hosts\":%d,\"bytes\":4096,\"seconds\":%.9g}", n,
                  config.cross_size, round_trip_s);
    emit(line);
    std::printf("%9s | %-22s | %-22s | %-22s | %-22s | %s\n", "size", "dtrain runtime", "dtrain data path", "Open MPI",
                "Gloo ring", "data path busbw vs MPI, Gloo, memcpy");
    std::printf("%9s | %-22s | %-22s | %-22s | %-22s |\n", "", "time  busbw", "time  busbw", "time  busbw",
                "time  busbw");
  }
  double runtime_4k_s = 0, data_path_4k_s = 0;
  for (std::size_t bytes = 4096; bytes <= options.max_bytes; bytes *= 4) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> buffer(count, 1.0f);
    const dtrain::TensorView view{buffer.data(), dtrain::DataType::kFloat32, {static_cast<std::int64_t>(count)}};
    const double t_runtime = time_per_op([&] { dtrain::allreduce("bench", view, view, {dtrain::ReduceOp::kSum}); },
                                         options.seconds_per_size);
    const double t_data = time_per_op(
        [&] { data_path->allreduce(buffer.data(), count, dtrain::DataType::kFloat32, dtrain::ReduceOp::kSum); },
        options.seconds_per_size);
    const double t_mpi = !with_mpi ? 0.0
                                   : time_per_op(
                                         [&] {
                                           MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(count),
                                                         MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                                         },
                                         options.seconds_per_size);
    const double t_gloo =
        time_per_op([&] { gloo_ring_allreduce(gloo, buffer.data(), count); }, options.seconds_per_size);
    if (bytes == 4096) {
      runtime_4k_s = t_runtime;
      data_path_4k_s = t_data;
    }
    auto busbw = [&](double t) { return t > 0 ? static_cast<double>(bytes) / t * bus_factor : 0.0; };
    if (rank == 0) {
      std::printf(
          "%9s | %8.1f us %7.3f GB/s | %8.1f us %7.3f GB/s | %8.1f us %7.3f GB/s | %8.1f us %7.3f GB/s | "
          "%5.2fx %5.2fx %4.0f%%\n",
          human_bytes(bytes).c_str(), t_runtime * 1e6, busbw(t_runtime) / 1e9, t_data * 1e6, busbw(t_data) / 1e9,
          t_mpi * 1e6, busbw(t_mpi) / 1e9, t_gloo * 1e6, busbw(t_gloo) / 1e9, with_mpi ? t_mpi / t_data : 0.0,
          t_gloo / t_data, 100 * busbw(t_data) / memcpy_bps);
      std::fflush(stdout);
      char line[512];
      std::snprintf(line, sizeof(line),
                    "{\"bench\":\"allreduce\",\"ranks\":%d,\"hosts\":%d,\"bytes\":%zu,\"dtrain_runtime_s\":%.9g,"
                    "\"dtrain_data_path_s\":%.9g,\"mpi_s\":%.9g,\"gloo_s\":%.9g,\"busbw_factor\":%.6g,"
                    "\"memcpy_bytes_per_s\":%.6g}",
                    n, config.cross_size, bytes, t_runtime, t_data, t_mpi, t_gloo, bus_factor, memcpy_bps);
      emit(line);
    }
  }

  if (rank == 0 && round_trip_s > 0) {
    std::printf("4 KiB: the runtime %.2fx, the data path %.2fx the TCP round trip\n", runtime_4k_s / round_trip_s,
                data_path_4k_s / round_trip_s);
  }

  if (!options.skip_resnet50) resnet50_gradients(rank, n, emit);
  barriers(rank, n, with_mpi, *data_path, gloo, emit);
  if (json) std::fclose(json);
  data_path.reset();
  dtrain::shutdown();
  if (rank == 0) std::filesystem::remove_all(gloo_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench: dtrain's benchmarks"};
  app.require_subcommand(1);
  Options options;
  auto* allreduce =
      app.add_subcommand("allreduce", "allreduce against Open MPI and Gloo (run under dtrain run [--mpi])");
  allreduce->add_option("--json", options.json, "Append results as JSON lines to this file");
  allreduce->add_option("--gloo-dir", options.gloo_dir, "Directory every rank sees, for Gloo's rendezvous");
  allreduce->add_option("--max-bytes", options.max_bytes, "Largest size (default 256 MiB)");
  allreduce->add_option("--seconds-per-size", options.seconds_per_size, "Time budget per size and peer");
  allreduce->add_flag("--skip-resnet50", options.skip_resnet50, "Leave out the ResNet-50 gradients");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain-bench allreduce: %s\n", e.what());
    return 1;
  }
}
