#include "metrics/event_file_writer.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <filesystem>
#include <system_error>

#include "metrics/proto_encoder.h"

namespace dtrain::metrics {
namespace {

// Field numbers of tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto.
// Only the fields written here are listed.
namespace event_field {
constexpr int kWallTime = 1;     // double, seconds since the Unix epoch
constexpr int kStep = 2;         // int64
constexpr int kFileVersion = 3;  // string, only in the first record
constexpr int kSummary = 5;      // Summary
}  // namespace event_field
namespace summary_field {
constexpr int kValue = 1;  // repeated Summary.Value
}  // namespace summary_field
namespace value_field {
constexpr int kTag = 1;          // string
constexpr int kSimpleValue = 2;  // float: TensorBoard's scalar plugin reads these as scalars
}  // namespace value_field

// TensorBoard refuses files whose first record does not announce this version.
constexpr const char* kFileVersion = "brain.Event:2";

double wall_time_now() {
  const auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  return std::chrono::duration<double>(since_epoch).count();
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string create_log_dir(const std::string& log_dir) {
  std::error_code error;
  std::filesystem::create_directories(log_dir, error);
  // create_directories reports no error for an existing directory; anything else that is
  // not a directory (a regular file in the way) is an error too.
  if (!error && !std::filesystem::is_directory(log_dir, error) && !error) {
    error = std::make_error_code(std::errc::not_a_directory);
  }
  if (error) throw MetricsError("cannot create TensorBoard log directory '" + log_dir + "': " + error.message());
  return log_dir;
}

std::string new_event_file_path(const std::string& log_dir) {
  // Process-wide, so two writers in one process (one per evaluation, say) never collide;
  // the pid separates processes and the host name separates machines sharing a directory.
  static std::atomic<std::uint64_t> counter{0};
  const auto seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string name = "events.out.tfevents." + std::to_string(seconds) + "." + host_name() + "." +
                           std::to_string(getpid()) + "." + std::to_string(counter++);
  return (std::filesystem::path(create_log_dir(log_dir)) / name).string();
}

}  // namespace

EventFileWriter::EventFileWriter(const std::string& log_dir) : records_(new_event_file_path(log_dir)) {
  ProtoEncoder event;
  event.add_double(event_field::kWallTime, wall_time_now());
  event.add_bytes(event_field::kFileVersion, kFileVersion);
  records_.write(event.bytes());
}

void EventFileWriter::add_scalar(const std::string& tag, double value, std::int64_t step) {
  add_scalars(step, {{tag, value}});
}

void EventFileWriter::add_scalars(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  ProtoEncoder summary;
  for (const auto& [tag, value] : scalars) {
    if (tag.empty()) throw MetricsError("scalar for event file '" + path() + "' has an empty tag");
    ProtoEncoder summary_value;
    summary_value.add_bytes(value_field::kTag, tag);
    summary_value.add_float(value_field::kSimpleValue, static_cast<float>(value));
    summary.add_message(summary_field::kValue, summary_value);
  }
  ProtoEncoder event;
  event.add_double(event_field::kWallTime, wall_time_now());
  // proto3 leaves fields at their default (step 0) out; readers take a missing step as 0.
  // Doing the same keeps the bytes identical to what libprotobuf would write.
  if (step != 0) event.add_int64(event_field::kStep, step);
  event.add_message(event_field::kSummary, summary);
  records_.write(event.bytes());
}

void EventFileWriter::flush() { records_.flush(); }

}  // namespace dtrain::metrics
