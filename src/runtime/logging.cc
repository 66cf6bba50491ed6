#include "runtime/logging.h"

#include <cstdlib>
#include <memory>

#include <spdlog/sinks/stdout_sinks.h>

namespace dtrain::runtime {
namespace {

std::shared_ptr<spdlog::logger> make_logger() {
  auto logger = std::make_shared<spdlog::logger>("dtrain", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  const char* level = std::getenv("DTRAIN_LOG_LEVEL");
  logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [dtrain] [%l] %v");
  return logger;
}

}  // namespace

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = make_logger();
  return *logger;
}

void configure_logging(int rank, const std::string& host) {
  log().set_pattern("[%Y-%m-%d %H:%M:%S.%e] [dtrain rank " + std::to_string(rank) + " " + host + "] [%l] %v");
}

}  // namespace dtrain::runtime
