#include "job/sbatch_script.h"

#include <gtest/gtest.h>

#include "job/job_error.h"

namespace dtrain::job {
namespace {

JobSpec two_by_four() {
  JobSpec spec;
  spec.name = "mnist-2x4";
  spec.command = {"/opt/dtrain/bin/dtrain-mnist", "--log-every", "10"};
  spec.instance_count = 2;
  spec.processes_per_host = 4;
  spec.max_run_seconds = 5401;
  spec.environment = {{"NOTE", "it's fine"}, {"OMP_NUM_THREADS", "1"}};
  return spec;
}

TEST(SbatchScript, DirectivesEnvironmentAndOneEntryPointPerNode) {
  SbatchOptions options;
  options.dtrain_exe = "/opt/dtrain/bin/dtrain";
  options.hosts_dir = "/shared/jobs/mnist-2x4/slurm-work/hosts";
  options.log_file = "/shared/jobs/mnist-2x4/slurm-work/slurm.log";
  options.partition = "gpu";
  const std::string script = render_sbatch_script(two_by_four(), options);
  for (const char* line :
       {"#!/bin/bash\n", "#SBATCH --job-name=mnist-2x4\n", "#SBATCH --nodes=2\n", "#SBATCH --ntasks-per-node=4\n",
        "#SBATCH --time=0-01:31:00\n", "#SBATCH --output=/shared/jobs/mnist-2x4/slurm-work/slurm.log\n",
        "#SBATCH --partition=gpu\n", "export NOTE='it'\\''s fine'\n", "export OMP_NUM_THREADS='1'\n",
        "exec srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --label --kill-on-bad-exit=0 \\\n"
        "  '/opt/dtrain/bin/dtrain' job slurm-host --hosts-dir "
        "'/shared/jobs/mnist-2x4/slurm-work/hosts' -- '/opt/dtrain/bin/dtrain-mnist' "
        "'--log-every' '10'\n"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n---\n" << script;
  }
}

TEST(SbatchScript, TimeLimitsRoundUpToWholeMinutesAndDays) {
  EXPECT_EQ(slurm_time_limit(1), "0-00:01:00");
  EXPECT_EQ(slurm_time_limit(60), "0-00:01:00");
  EXPECT_EQ(slurm_time_limit(61), "0-00:02:00");
  EXPECT_EQ(slurm_time_limit(86400), "1-00:00:00");
  EXPECT_EQ(slurm_time_limit(90061), "1-01:02:00");
}

TEST(SbatchScript, WhatSlurmCannotRunYetIsRefusedWithTheReason) {
  JobSpec mpi = two_by_four();
  mpi.engine = Engine::kMpi;
  EXPECT_THROW(render_sbatch_script(mpi, {}), JobError);
  JobSpec pipe = two_by_four();
  ChannelSpec channel;
  channel.name = "training";
  channel.input_mode = InputMode::kPipe;
  pipe.channels.push_back(channel);
  try {
    render_sbatch_script(pipe, {});
    ADD_FAILURE() << "a Pipe channel was accepted";
  } catch (const JobError& e) {
    EXPECT_NE(std::string(e.what()).find("channel 'training': Pipe input mode"), std::string::npos) << e.what();
  }
  JobSpec elastic = two_by_four();
  elastic.elastic = ElasticSpec{1, 2};
  try {
    render_sbatch_script(elastic, {});
    ADD_FAILURE() << "an elastic job was accepted";
  } catch (const JobError& e) {
    const std::string m = e.what();
    EXPECT_TRUE(m.starts_with("elastic: not supported on Slurm yet")) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace dtrain::job
