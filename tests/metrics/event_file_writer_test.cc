// EventFileWriter's files are read back by read_tfevents.py, a reader written apart from the
// C++ code (its own CRC-32C, framing and protobuf decoding), so a shared mistake is unlikely.
#include "metrics/event_file_writer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"

namespace dtrain::metrics {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::TempDir;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) files.push_back(entry.path());
  return files;
}

class EventFileWriterTest : public ::testing::Test {
 protected:
  // Runs the independent reader on `event_file`.
  dtrain::testing::CommandOutcome read_events(const std::string& event_file) {
    return dtrain::testing::run_capturing("/usr/bin/python3 " DTRAIN_READ_TFEVENTS " '" + event_file + "'",
                                          scratch_.path().string());
  }
  // Runs the reader and expects it to accept the file; returns its events.
  nlohmann::json events_of(const std::string& event_file) {
    const auto outcome = read_events(event_file);
    EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
    if (outcome.exit_code != 0) return nlohmann::json::array();
    return nlohmann::json::parse(outcome.out);
  }

  TempDir log_dir_;
  TempDir scratch_;  // the reader's stdout and stderr, away from the log directory
};

TEST_F(EventFileWriterTest, ScalarsReadBackByAnIndependentReader) {
  const double before = now_seconds();
  std::string path;
  {
    EventFileWriter writer(log_dir_.path().string());
    path = writer.path();
    writer.add_scalar("train/loss", 2.5, 0);
    writer.add_scalar("train/loss", 0.123456789, 10);
    writer.add_scalars(20, {{"eval/bbox_mAP", 0.3712}, {"eval/segm_mAP", 0.3398}, {"train/lr", 0.02}});
    writer.add_scalar("train/loss", -1e-7, std::int64_t{1} << 40);
    writer.add_scalar("debug/negative_step", 7.0, -3);
    writer.flush();
  }
  const double after = now_seconds();

  const nlohmann::json events = events_of(path);
  ASSERT_EQ(events.size(), 6u) << events.dump();

  // The version record comes first and holds no scalars.
  EXPECT_EQ(events[0].value("file_version", ""), "brain.Event:2");
  EXPECT_TRUE(events[0]["scalars"].empty());
  for (std::size_t i = 1; i < events.size(); ++i) {
    EXPECT_FALSE(events[i].contains("file_version")) << "event " << i;
  }
  for (const auto& event : events) {
    EXPECT_GE(event["wall_time"].get<double>(), before - 1e-3);
    EXPECT_LE(event["wall_time"].get<double>(), after + 1e-3);
  }

  // Scalars are stored as 32-bit floats: the float of what was written, exactly.
  const auto scalar = [&](std::size_t event, const std::string& tag) {
    return static_cast<float>(events[event]["scalars"].at(tag).get<double>());
  };
  EXPECT_EQ(events[1]["step"], 0);
  EXPECT_EQ(events[1]["scalars"].size(), 1u);
  EXPECT_EQ(scalar(1, "train/loss"), 2.5f);
  EXPECT_EQ(events[2]["step"], 10);
  EXPECT_EQ(scalar(2, "train/loss"), static_cast<float>(0.123456789));
  EXPECT_EQ(events[3]["step"], 20);
  EXPECT_EQ(events[3]["scalars"].size(), 3u);
  EXPECT_EQ(scalar(3, "eval/bbox_mAP"), static_cast<float>(0.3712));
  EXPECT_EQ(scalar(3, "eval/segm_mAP"), static_cast<float>(0.3398));
  EXPECT_EQ(scalar(3, "train/lr"), static_cast<float>(0.02));
  EXPECT_EQ(events[4]["step"], std::int64_t{1} << 40);
  EXPECT_EQ(scalar(4, "train/loss"), static_cast<float>(-1e-7));
  EXPECT_EQ(events[5]["step"], -3);
  EXPECT_EQ(scalar(5, "debug/negative_step"), 7.0f);
}

TEST_F(EventFileWriterTest, NonFiniteScalarsAreWrittenAsSuch) {
  EventFileWriter writer(log_dir_.path().string());
  writer.add_scalars(1, {{"loss", std::numeric_limits<double>::quiet_NaN()},
                         {"grad_norm", std::numeric_limits<double>::infinity()},
                         {"overflow", 1e300}});  // beyond float: +inf, as a float cast gives
  const nlohmann::json events = events_of(writer.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1]["scalars"]["loss"], "nan");
  EXPECT_EQ(events[1]["scalars"]["grad_norm"], "inf");
  EXPECT_EQ(events[1]["scalars"]["overflow"], "inf");
}

TEST_F(EventFileWriterTest, FileIsNamedAsTensorBoardExpects) {
  const std::string dir = log_dir_ / "run1";
  EventFileWriter writer(dir);
  const fs::path path = writer.path();
  EXPECT_EQ(path.parent_path(), fs::path(dir));
  EXPECT_TRUE(fs::is_regular_file(path));
  // events.out.tfevents.<unix seconds>.<hostname>.<pid>.<counter>
  const std::string name = path.filename().string();
  const std::string prefix = "events.out.tfevents.";
  ASSERT_EQ(name.rfind(prefix, 0), 0u) << name;
  const std::string rest = name.substr(prefix.size());
  const long long seconds = std::stoll(rest.substr(0, rest.find('.')));
  EXPECT_NEAR(static_cast<double>(seconds), now_seconds(), 60.0);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  EXPECT_NE(rest.find("." + std::string(host) + "." + std::to_string(getpid()) + "."), std::string::npos) << name;
}

TEST_F(EventFileWriterTest, CreatesMissingParentDirectories) {
  const std::string dir = log_dir_ / "a/b/c";
  EventFileWriter writer(dir);
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(fs::path(writer.path()).parent_path(), fs::path(dir));
}

TEST_F(EventFileWriterTest, TwoWritersInOneProcessWriteTwoFiles) {
  EventFileWriter train(log_dir_.path().string());
  EventFileWriter eval(log_dir_.path().string());
  EXPECT_NE(train.path(), eval.path());
  train.add_scalar("train/loss", 1.0, 1);
  eval.add_scalar("eval/bbox_mAP", 0.5, 1);
  EXPECT_EQ(files_in(log_dir_.path()).size(), 2u);

  const nlohmann::json train_events = events_of(train.path());
  const nlohmann::json eval_events = events_of(eval.path());
  ASSERT_EQ(train_events.size(), 2u);
  ASSERT_EQ(eval_events.size(), 2u);
  EXPECT_TRUE(train_events[1]["scalars"].contains("train/loss"));
  EXPECT_FALSE(train_events[1]["scalars"].contains("eval/bbox_mAP"));
  EXPECT_TRUE(eval_events[1]["scalars"].contains("eval/bbox_mAP"));
}

TEST_F(EventFileWriterTest, CorruptedBytesAreReportedAsCrcErrors) {
  std::string path;
  {
    EventFileWriter writer(log_dir_.path().string());
    path = writer.path();
    writer.add_scalar("train/loss", 0.5, 1);
  }
  const std::string pristine = dtrain::testing::read_file(path);
  ASSERT_EQ(read_events(path).exit_code, 0);

  // Offset of the second record: the first one's length + 16 bytes of framing.
  std::uint64_t first_length = 0;
  for (int i = 7; i >= 0; --i) first_length = (first_length << 8) | static_cast<unsigned char>(pristine[i]);
  const std::size_t second = 8 + 4 + first_length + 4;
  ASSERT_LT(second + 16, pristine.size());

  struct Case {
    std::size_t offset;
    std::string message;
  };
  const std::vector<Case> cases = {
      {second + 12 + 5, "record 1 at offset " + std::to_string(second) + ": data CRC mismatch"},  // in the data
      {pristine.size() - 1, "data CRC mismatch"},                                                 // in the data CRC
      {second + 1, "length CRC mismatch"},                                                        // in the length
      {8, "record 0 at offset 0: length CRC mismatch"},                                           // in the length CRC
  };
  for (const Case& c : cases) {
    std::string corrupted = pristine;
    corrupted[c.offset] = static_cast<char>(corrupted[c.offset] ^ 0x20);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << corrupted;
    const auto outcome = read_events(path);
    EXPECT_EQ(outcome.exit_code, 1) << "byte " << c.offset << ": " << outcome.out;
    EXPECT_NE(outcome.err.find(c.message), std::string::npos) << "byte " << c.offset << ": " << outcome.err;
  }

  // A file cut inside a record is refused as well.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << pristine.substr(0, pristine.size() - 3);
  const auto truncated = read_events(path);
  EXPECT_EQ(truncated.exit_code, 1);
  EXPECT_NE(truncated.err.find("truncated"), std::string::npos) << truncated.err;
}

TEST_F(EventFileWriterTest, KilledProcessLeavesWholeRecords) {
  // The child writes and is killed before any destructor or flush() runs.
  const std::string dir = log_dir_ / "killed";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    EventFileWriter writer(dir);
    for (int step = 0; step < 100; ++step) writer.add_scalar("train/loss", 1.0 / (step + 1), step);
    raise(SIGKILL);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  const auto files = files_in(dir);
  ASSERT_EQ(files.size(), 1u);
  const nlohmann::json events = events_of(files[0].string());
  ASSERT_EQ(events.size(), 101u);
  EXPECT_EQ(events[100]["step"], 99);
}

TEST(EventFileWriterErrors, LogDirUnderARegularFileThrowsNamingThePath) {
  TempDir dir;
  const std::string blocker = dir / "not-a-directory";
  std::ofstream(blocker) << "x";
  const std::string log_dir = blocker + "/logs";
  try {
    EventFileWriter writer(log_dir);
    FAIL() << "expected MetricsError for " << log_dir;
  } catch (const MetricsError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'" + log_dir + "'"), std::string::npos) << message;
    EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The log directory itself being a regular file.
  try {
    EventFileWriter writer(blocker);
    FAIL() << "expected MetricsError for " << blocker;
  } catch (const MetricsError& e) {
    EXPECT_NE(std::string(e.what()).find("'" + blocker + "'"), std::string::npos) << e.what();
  }
}

TEST(EventFileWriterErrors, EmptyTagThrows) {
  TempDir dir;
  EventFileWriter writer(dir.path().string());
  EXPECT_THROW(writer.add_scalar("", 1.0, 1), MetricsError);
}

TEST(EventFileWriterErrors, MetricsErrorIsARuntimeError) {
  TempDir dir;
  const std::string blocker = dir / "file";
  std::ofstream(blocker) << "x";
  EXPECT_THROW(EventFileWriter{blocker + "/sub"}, std::runtime_error);
}

}  // namespace
}  // namespace dtrain::metrics
