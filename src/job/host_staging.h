// Staging a job's hosts the way the platform does before the entry points start: each
// host's /opt/ml/input/config files, its checkpoints restored from checkpoint.sync_to, its
// channels copied, sharded or prepared as pipes. Shared by the local and the Slurm runner.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "job/channel_stager.h"
#include "job/job_spec.h"
#include "job/local_cluster.h"
#include "job/pipe_feeder.h"

namespace dtrain::job {

// What staging left on the hosts.
struct StagedHosts {
  std::vector<ChannelStaging> staging;               // one report per channel and host
  std::vector<std::unique_ptr<PipeFeeder>> feeders;  // the Pipe-mode channels' feeders, not started
  double seconds = 0;
};

// Stages every host (name and root are what it uses); `network_interface` goes into each
// host's resourceconfig.json ("" lets the launcher find the address itself). Prints one line
// per channel and host.
StagedHosts stage_hosts(const JobSpec& spec, const std::vector<LocalHost>& hosts, const std::string& network_interface);

}  // namespace dtrain::job
