#include "apps/dtrain/flight_record_command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "flight_record/flight_record.h"
#include "flight_record/hang_verdict.h"

namespace dtrain::cli {
namespace {

namespace fs = std::filesystem;
using flight_record::RankRecord;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A whole record file, or every record line in a log; a damaged record is named and skipped.
std::vector<RankRecord> records_in(const fs::path& path) {
  const std::string text = contents(path);
  try {
    return {flight_record::parse_rank_record(text)};
  } catch (const std::invalid_argument&) {
    // Not one record: a log with record lines in it.
  }
  std::vector<RankRecord> records;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const auto at = line.find(flight_record::kLinePrefix);
    if (at == std::string::npos) continue;
    try {
      records.push_back(flight_record::parse_rank_record(line.substr(at + flight_record::kLinePrefix.size())));
    } catch (const std::invalid_argument& e) {
      std::fprintf(stderr, "dtrain flight-record: %s line %d skipped: %s\n", path.c_str(), number, e.what());
    }
  }
  return records;
}

std::vector<RankRecord> records_under(const fs::path& path) {
  if (!fs::is_directory(path)) return records_in(path);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.starts_with("rank") && name.ends_with(".json")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<RankRecord> records;
  for (const auto& file : files) {
    for (auto& r : records_in(file)) records.push_back(std::move(r));
  }
  return records;
}

}  // namespace

FlightRecordCommand::FlightRecordCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("flight-record", "Say which rank a hung job waits on, from the ranks' flight records");
  app_->add_option("paths", paths_,
                   "DTRAIN_FLIGHT_RECORDER_DIR directories, rank<R>.json files, or logs with the ranks' stderr")
      ->required()
      ->type_name("PATH");
  app_->add_option("--world-size", world_size_, "Ranks in the job (default: what the records say)")
      ->check(CLI::Range(1, 1 << 20));
}

int FlightRecordCommand::execute() const {
  std::vector<RankRecord> records;
  for (const auto& path : paths_) {
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      std::fprintf(stderr, "dtrain flight-record: %s: no such file or directory\n", path.c_str());
      return 2;
    }
    try {
      for (auto& r : records_under(path)) records.push_back(std::move(r));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "dtrain flight-record: %s\n", e.what());
      return 2;
    }
  }
  if (records.empty()) {
    std::fprintf(stderr,
                 "dtrain flight-record: no flight records in %zu path%s (rank<R>.json files, or lines "
                 "starting \"%s\")\n",
                 paths_.size(), paths_.size() == 1 ? "" : "s", std::string(flight_record::kLinePrefix).c_str());
    return 1;
  }
  int world_size = world_size_;
  if (world_size == 0) {
    for (const auto& r : records) world_size = std::max(world_size, r.size);
  }
  std::printf("%s\n", flight_record::hang_verdict(records, world_size).c_str());
  return 0;
}

}  // namespace dtrain::cli
