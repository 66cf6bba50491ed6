// A Mask R-CNN config file (vision/config/config.h) over the defaults, as --config-file reads
// it. The input is written to a file of its own first: the config reads files, by design.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/fuzz/fuzz_target.h"
#include "vision/config/config.h"
#include "vision/config/maskrcnn_defaults.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/dtrain-fuzz-config-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  dtrain::fuzz::expect_clean_errors([&] {
    dtrain::vision::config::Config config = dtrain::vision::config::maskrcnn_defaults();
    config.merge_from_file(path);
    config.dump();
  });
  std::remove(path.c_str());
  return 0;
}
