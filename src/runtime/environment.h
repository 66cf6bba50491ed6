// Everything the runtime reads from its environment: the world the launcher describes and
// the tuning knobs, each under one DTRAIN_* name (see the README's table).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace dtrain::runtime {

struct RuntimeConfig {
  // The world.
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string hostname;
  bool launched_by_mpirun = false;  // the world came from OMPI_COMM_WORLD_*; data moves over MPI
  bool launched_by_slurm = false;   // the world came from srun's SLURM_* (a task of a job step)

  // Rendezvous (only when size > 1 under dtrain run or srun).
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  std::string job_token;
  std::string job_id;
  std::string iface;
  // Under a bare srun no launcher serves the store: rank 0 serves it on rendezvous_port of
  // the step's first node, and the token, unless DTRAIN_JOB_TOKEN gives one, is derived
  // from the job (not secret: see docs/slurm.md).
  bool rendezvous_in_step = false;
  bool job_token_derived = false;

  // An elastic job's worker (`dtrain run --min-np/--max-np`): the launcher's number for this
  // process (DTRAIN_ELASTIC_WORKER; -1 otherwise). Its rank and size come from the round it
  // joins (runtime/elastic_membership.h), not from DTRAIN_RANK/DTRAIN_SIZE.
  int elastic_worker = -1;
  int elastic_round = 0;  // the round this process's world was formed in
  // This process's init() count, or the elastic round: keys the rendezvous of every world
  // connected under this init (the job's, its process sets').
  int generation = 0;

  // A process set's loop (dtrain::ProcessSet): the set's name and its members' job ranks, in
  // ascending order (rank and size above are then the set's: a place in `members`). Empty for
  // the job's own loop.
  std::string process_set;
  std::vector<int> members;
  int job_size = 0;  // a process set's: the job's size

  // Knobs.
  std::size_t fusion_threshold_bytes = 64 * 1024 * 1024;
  double cycle_time_ms = 1.0;
  std::size_t cache_capacity = 1024;
  double stall_warning_s = 60;
  double stall_shutdown_s = 0;  // 0: never
  std::string timeline_path;
  // DTRAIN_FLIGHT_RECORDER_ENTRIES: the collectives the flight recorder keeps (0: off);
  // DTRAIN_FLIGHT_RECORDER_DIR: where it writes the whole ring (runtime/flight_recorder.h).
  std::size_t flight_recorder_entries = 1024;
  std::string flight_recorder_dir;
  bool timeline_mark_cycles = false;  // a marker at each cycle that had work
  bool shared_memory = true;          // DTRAIN_SHM: allreduce through shared memory among a host's ranks
  int hierarchical = -1;              // DTRAIN_HIERARCHICAL_ALLREDUCE: -1 automatic, 0 off, 1 on
  // DTRAIN_TCP_MESH: over TCP (not MPI), negotiation and small collectives go over dtrain's
  // own mesh of connections (runtime/transport/tcp/mesh_transport.h); 0: all over Gloo.
  bool tcp_mesh = true;
  // DTRAIN_TCP_MESH_BYTES: the most bytes one rank sends in a data collective the mesh takes.
  std::size_t tcp_mesh_bytes = 1 << 20;
  // DTRAIN_SUMMARY_RIDER_BYTES: how many bytes of small allreduces' data all ranks' negotiation
  // summaries may carry together across hosts (cycle_summary.h's riders); 0: none.
  std::size_t summary_rider_bytes = 64 << 10;
  // DTRAIN_AUTOTUNE: rank 0 tunes the fusion threshold and cycle time while training runs.
  bool autotune = false;
  std::string autotune_log;           // DTRAIN_AUTOTUNE_LOG: a CSV row per sample
  int autotune_warmup_samples = 3;    // DTRAIN_AUTOTUNE_WARMUP_SAMPLES
  int autotune_steps_per_sample = 5;  // DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE
  // DTRAIN_BACKGROUND_NICE: the background loop's thread's nice value (0 to 19); -1, unset:
  // chosen by the host's ranks and cores (runtime/loop_priority.h).
  int background_nice = -1;
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // DTRAIN_GPU_ENGINE: how collectives on CUDA memory move (auto, nccl or staged; see
  // runtime/gpu/engine_choice.h).
  std::string gpu_engine = "auto";
};

// Reads DTRAIN_* variables; a malformed or inconsistent value is an Error naming the variable.
RuntimeConfig read_config_from_environment();

}  // namespace dtrain::runtime
