// The runtime's one logger: stderr, every line tagged with rank and host so a launcher's
// merged output says where it came from. Level from DTRAIN_LOG_LEVEL (default warn).
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace dtrain::runtime {

spdlog::logger& log();

// Re-tags the logger once rank and host are known.
void configure_logging(int rank, const std::string& host);

}  // namespace dtrain::runtime
