#include "job/host_staging.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "job/artifact_packer.h"
#include "job/container_layout.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sorted_names(const std::vector<LocalHost>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.name);
  std::sort(names.begin(), names.end());
  return names;
}

// The host's /opt/ml/input/config files, as the platform writes them.
void write_host_config(const JobSpec& spec, const std::string& network_interface, const std::vector<std::string>& names,
                       const LocalHost& host, const ContainerLayout& layout) {
  ContainerConfig config;
  config.hyperparameters_file = hyperparameters_file_for(spec);
  config.resource.current_host = host.name;
  config.resource.current_instance_type = spec.instance_type;
  config.resource.hosts = names;
  config.resource.network_interface_name = network_interface;
  config.input_data_config = input_data_config_for(spec);
  write_container_config(layout, config);
}

// The host's checkpoint directory, with what an earlier run synced (checkpoint.sync_to).
void restore_checkpoints(const JobSpec& spec, const ContainerLayout& layout) {
  std::error_code ec;
  std::string checkpoints = layout.container_path(spec.checkpoint.local_path);
  fs::create_directories(checkpoints, ec);
  if (spec.checkpoint.sync_to && fs::is_directory(*spec.checkpoint.sync_to, ec)) {
    copy_tree(*spec.checkpoint.sync_to, checkpoints);
  }
}

}  // namespace

StagedHosts stage_hosts(const JobSpec& spec, const std::vector<LocalHost>& hosts,
                        const std::string& network_interface) {
  StagedHosts staged;
  const auto started = std::chrono::steady_clock::now();
  const std::vector<std::string> names = sorted_names(hosts);
  const int count = static_cast<int>(hosts.size());
  for (int index = 0; index < count; ++index) {
    const LocalHost& host = hosts[static_cast<size_t>(index)];
    ContainerLayout layout(host.root);
    write_host_config(spec, network_interface, names, host, layout);
    restore_checkpoints(spec, layout);
    for (const auto& channel : spec.channels) {
      ChannelStaging report = stage_channel(channel, layout, host.name, index, count);
      std::printf("%s\n", report.describe().c_str());
      staged.staging.push_back(report);
      if (channel.input_mode == InputMode::kPipe) {
        staged.feeders.push_back(std::make_unique<PipeFeeder>(layout.input_data_dir(), channel.name,
                                                              pipe_files_for_host(channel, index, count)));
      }
    }
  }
  staged.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::fflush(stdout);
  return staged;
}

}  // namespace dtrain::job
