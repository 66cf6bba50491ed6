#include "job/channel_stager.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "job/job_error.h"

namespace dtrain::job {

namespace fs = std::filesystem;

std::vector<std::string> list_channel_files(const std::string& source) {
  std::vector<std::string> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(source, fs::directory_options::follow_directory_symlink, ec);
       !ec && it != fs::end(it); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), source, ec).string());
  }
  if (ec) throw JobError::runtime(fmt::format("cannot list {}: {}", source, ec.message()));
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> shard_for_host(const std::vector<std::string>& sorted_keys, int host_index, int host_count) {
  if (host_count < 1 || host_index < 0 || host_index >= host_count) return {};
  size_t n = sorted_keys.size();
  size_t hosts = static_cast<size_t>(host_count);
  size_t i = static_cast<size_t>(host_index);
  size_t base = n / hosts, extra = n % hosts;
  size_t begin = i * base + std::min(i, extra);
  size_t count = base + (i < extra ? 1 : 0);
  return std::vector<std::string>(sorted_keys.begin() + static_cast<long>(begin),
                                  sorted_keys.begin() + static_cast<long>(begin + count));
}

nlohmann::ordered_json ChannelStaging::to_json() const {
  return {{"channel", channel}, {"host", host},   {"method", method},
          {"files", files},     {"bytes", bytes}, {"seconds", seconds}};
}

std::string ChannelStaging::describe() const {
  if (method == "shared") {
    return fmt::format("{}: channel {}: shared directory mounted (no copy)", host, channel);
  }
  if (method == "pipe") {
    return fmt::format("{}: channel {}: {} files ({} bytes) to stream in Pipe mode", host, channel, files, bytes);
  }
  return fmt::format("{}: channel {}: staged {} files, {} bytes in {:.3f} s ({})", host, channel, files, bytes, seconds,
                     method);
}

ChannelStaging stage_channel(const ChannelSpec& channel, const ContainerLayout& layout, const std::string& host,
                             int host_index, int host_count) {
  auto started = std::chrono::steady_clock::now();
  ChannelStaging report;
  report.channel = channel.name;
  report.host = host;
  fs::path target = layout.channel_dir(channel.name);
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::create_directories(target.parent_path(), ec);

  if (channel.input_mode == InputMode::kPipe) {
    report.method = "pipe";
    for (const auto& f : pipe_files_for_host(channel, host_index, host_count)) {
      ++report.files;
      report.bytes += fs::file_size(f, ec);
    }
    return report;
  }
  if (channel.shared) {
    report.method = "shared";
    fs::create_directory_symlink(channel.source, target, ec);
    if (ec) {
      throw JobError::runtime(
          fmt::format("{}: channel {}: cannot mount {}: {}", host, channel.name, channel.source, ec.message()));
    }
  } else {
    std::vector<std::string> keys = list_channel_files(channel.source);
    if (channel.distribution == Distribution::kShardedByKey) {
      keys = shard_for_host(keys, host_index, host_count);
      report.method = "shard";
    } else {
      report.method = "copy";
    }
    fs::create_directories(target, ec);
    for (const auto& key : keys) {
      fs::path from = fs::path(channel.source) / key;
      fs::path to = target / key;
      fs::create_directories(to.parent_path(), ec);
      fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
      if (ec) {
        throw JobError::runtime(
            fmt::format("{}: channel {}: cannot copy {}: {}", host, channel.name, from.string(), ec.message()));
      }
      ++report.files;
      report.bytes += fs::file_size(to, ec);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

std::vector<std::string> pipe_files_for_host(const ChannelSpec& channel, int host_index, int host_count) {
  std::vector<std::string> keys = list_channel_files(channel.source);
  if (channel.distribution == Distribution::kShardedByKey) {
    keys = shard_for_host(keys, host_index, host_count);
  }
  std::vector<std::string> paths;
  for (const auto& k : keys) paths.push_back((fs::path(channel.source) / k).string());
  return paths;
}

}  // namespace dtrain::job
