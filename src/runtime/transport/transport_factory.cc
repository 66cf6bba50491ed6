#include "runtime/transport/transport_factory.h"

#include <optional>
#include <random>

#include "runtime/logging.h"
#include "runtime/transport/gloo/gloo_transport.h"
#include "runtime/transport/gloo/http_store.h"
#include "runtime/transport/gloo/step_rendezvous.h"
#include "runtime/transport/hierarchical_transport.h"
#include "runtime/transport/host_layout.h"
#include "runtime/transport/local/local_transport.h"
#include "runtime/transport/mpi/mpi_transport.h"
#include "runtime/transport/shm/shared_segment.h"
#include "runtime/transport/shm/shm_allreduce.h"
#include "runtime/transport/shm/shm_control.h"
#include "runtime/transport/tcp/bind_address.h"
#include "runtime/transport/tcp/mesh_transport.h"

namespace dtrain::runtime {
namespace {

// Which ranks are connecting: the job's, or a process set's members as a world of their own
// (config's rank and size are then the set's).
struct Scope {
  int generation = 0;        // this process's init() count, or the elastic round
  std::string set_key;       // empty for the job's world
  std::vector<int> members;  // a process set's job ranks, ascending
  bool is_set() const { return !set_key.empty(); }
};

GlooConnectOptions gloo_options(const RuntimeConfig& config, const Scope& scope) {
  GlooConnectOptions options;
  options.group.rank = config.rank;
  options.group.size = config.size;
  options.group.store_host = config.rendezvous_addr;
  options.group.store_port = config.rendezvous_port;
  options.group.token = config.job_token;
  options.group.key_prefix = config.job_id + "/init" + std::to_string(scope.generation);
  if (scope.is_set()) {
    options.group.key_prefix += "/set-" + scope.set_key;
    options.report_ready = false;  // the launcher tracks the job's ranks only
  }
  options.group.timeout = config.timeout;
  options.iface = config.iface;
  // Without an interface, bind where the others can reach us: loopback for a job the
  // launcher keeps on this machine, else the host name the launcher placed us on.
  const bool local_job = config.rendezvous_addr.rfind("127.", 0) == 0 || config.rendezvous_addr == "localhost";
  options.hostname = local_job ? "127.0.0.1" : config.hostname;
  return options;
}

// Gloo for bulk data and, unless DTRAIN_TCP_MESH=0, dtrain's TCP mesh beside it for the
// rest; both connect through the same store, under the same key prefix.
std::unique_ptr<Transport> connect_tcp(const RuntimeConfig& config, const GlooConnectOptions& options,
                                       const std::string& peer_noun) {
  std::unique_ptr<Transport> gloo = GlooTransport::connect(options);
  if (!config.tcp_mesh) return gloo;
  TcpMeshOptions mesh{options.group, bind_address(options.iface, options.hostname), peer_noun};
  return std::make_unique<MeshTransport>(TcpMesh::connect(mesh), std::move(gloo), config.tcp_mesh_bytes,
                                         config.summary_rider_bytes);
}

// A process set's engines are those of the job, connected among its members alone.
std::unique_ptr<Transport> connect_set(const RuntimeConfig& config, const Scope& scope) {
  if (config.size == 1) return std::make_unique<LocalTransport>();
  if (config.launched_by_mpirun) return MpiTransport::connect_members(scope.members, config.process_set, scope.set_key);
  return connect_tcp(config, gloo_options(config, scope), "process set " + config.process_set + " member");
}

std::unique_ptr<Transport> connect_global(const RuntimeConfig& config, const Scope& scope) {
  if (scope.is_set()) return connect_set(config, scope);
  if (config.launched_by_mpirun) {
    log().info("engine: MPI (started by mpirun, world from OMPI_COMM_WORLD_*)");
    return MpiTransport::connect();
  }
  if (config.size == 1) {
    // No peers to meet, but a launcher still waits to hear that this rank started.
    if (!config.rendezvous_in_step && !config.rendezvous_addr.empty() && config.rendezvous_port > 0 &&
        !config.job_token.empty()) {
      HttpStore(config.rendezvous_addr, config.rendezvous_port, config.job_token, config.timeout).report_ready(0);
    }
    return std::make_unique<LocalTransport>();
  }
  if (config.launched_by_slurm) {
    log().info("engine: Gloo (a Slurm step's task, world from SLURM_*; rendezvous on {}:{})", config.rendezvous_addr,
               config.rendezvous_port);
    meet_at_step_rendezvous(config);
  } else {
    log().info("engine: Gloo (started by dtrain run)");
  }
  if (config.tcp_mesh) {
    log().info("negotiation and collectives up to {} bytes per rank over dtrain's TCP mesh", config.tcp_mesh_bytes);
  }
  return connect_tcp(config, gloo_options(config, scope), "rank");
}

// A tag every rank agrees on (rank 0's random draw), so segment names differ per job and init.
std::string agree_on_tag(Transport& global) {
  std::vector<char> tag;
  if (global.rank() == 0) {
    std::random_device random;
    const std::string hex = std::to_string(random()) + std::to_string(random());
    tag.assign(hex.begin(), hex.end());
  }
  tag = global.broadcast_from_coordinator(tag);
  return std::string(tag.begin(), tag.end());
}

// Creator makes and formats the segment, everyone maps it, then the name goes away.
std::unique_ptr<ShmAllreduce> map_host_segment(Transport& global, const HostLayout& layout,
                                               const RuntimeConfig& config) {
  const std::size_t bytes = ShmAllreduce::segment_bytes(layout.local_size);
  std::optional<SharedSegment> segment;
  if (layout.local_size > 1 && layout.local_rank == 0) {
    remove_stale_segments();
    segment = SharedSegment::create(layout.segment_name, bytes);
    ShmAllreduce::format(*segment, layout.local_size);
  }
  global.barrier();
  if (layout.local_size > 1 && layout.local_rank != 0) segment = SharedSegment::open(layout.segment_name, bytes);
  global.barrier();
  if (!segment) return nullptr;
  segment->unlink();
  return std::make_unique<ShmAllreduce>(std::move(*segment), layout.local_rank, layout.local_size, config.timeout);
}

// For a job on one host: the negotiation's segment, mapped the same way.
std::unique_ptr<ShmControl> map_control_segment(Transport& global, const HostLayout& layout,
                                                const RuntimeConfig& config) {
  const std::size_t bytes = ShmControl::segment_bytes(global.size());
  std::optional<SharedSegment> segment;
  const std::string name = layout.segment_name + "-control";
  if (global.rank() == 0) {
    segment = SharedSegment::create(name, bytes);
    ShmControl::format(*segment, global.size());
  }
  global.barrier();
  if (global.rank() != 0) segment = SharedSegment::open(name, bytes);
  global.barrier();
  segment->unlink();
  return std::make_unique<ShmControl>(std::move(*segment), global.rank(), global.size(), config.timeout);
}

std::unique_ptr<Transport> connect_scope(RuntimeConfig& config, const Scope& scope) {
  std::unique_ptr<Transport> global = connect_global(config, scope);
  if (config.size == 1) return global;

  const HostLayout layout = discover_host_layout(*global, config.hostname, agree_on_tag(*global));
  config.local_rank = layout.local_rank;
  config.local_size = layout.local_size;
  config.cross_rank = layout.host_index;
  config.cross_size = layout.host_count;

  if (!config.shared_memory) {
    log().info("allreduce over {} only (DTRAIN_SHM=0)", config.launched_by_mpirun ? "MPI" : "Gloo");
    return global;
  }
  bool hierarchical = layout.host_count > 1 && config.hierarchical != 0;
  if (hierarchical && !layout.uniform()) {
    // Every host must cut chunks into the same shares for the cross-host step to line up.
    log().warn("hierarchical allreduce off: hosts run different numbers of ranks; using flat allreduce");
    hierarchical = false;
  }
  if (layout.host_count > 1 && !hierarchical) {
    if (config.hierarchical == 0) log().info("hierarchical allreduce off (DTRAIN_HIERARCHICAL_ALLREDUCE=0)");
    return global;
  }
  if (layout.host_count > 1 && layout.local_sizes.front() == 1) {
    log().info("hierarchical allreduce off: one rank per host, nothing to share in memory");
    return global;
  }
  if (layout.host_count == 1 && layout.local_size == 1) return global;

  std::unique_ptr<ShmAllreduce> local = map_host_segment(*global, layout, config);
  std::unique_ptr<ShmControl> control;
  if (layout.host_count == 1 && global->size() <= ShmControl::kMaxRanks) {
    control = map_control_segment(*global, layout, config);
    log().info("negotiation through shared memory among the {} ranks", global->size());
  }
  std::unique_ptr<Transport> cross;
  if (layout.host_count > 1) {
    if (config.launched_by_mpirun) {
      cross = static_cast<MpiTransport&>(*global).split(layout.local_rank, layout.host_index);
    } else {
      GlooConnectOptions options = gloo_options(config, scope);
      options.group.rank = layout.host_index;
      options.group.size = layout.host_count;
      options.group.key_prefix += "/cross" + std::to_string(layout.local_rank);
      options.report_ready = false;
      cross = connect_tcp(config, options, "host");
    }
  }
  log().info("{}allreduce through shared memory among {} local ranks{}",
             scope.is_set() ? "process set " + config.process_set + ": " : "", layout.local_size,
             cross ? ", then across " + std::to_string(layout.host_count) + " hosts" : "");
  return std::make_unique<HierarchicalTransport>(std::move(global), std::move(local), std::move(cross),
                                                 std::move(control));
}

}  // namespace

std::unique_ptr<Transport> connect_transport(RuntimeConfig& config, int generation) {
  return connect_scope(config, Scope{generation, {}, {}});
}

std::unique_ptr<Transport> connect_process_set_transport(RuntimeConfig& config, int generation, const std::string& key,
                                                         const std::vector<int>& members) {
  return connect_scope(config, Scope{generation, key, members});
}

}  // namespace dtrain::runtime
