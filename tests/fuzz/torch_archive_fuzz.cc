// A whole .pth file as a user, a config or a serving request hands it to dtrain
// (vision/torch_save/torch_checkpoint.h): the zip container (LibTorch's reader), the
// data.pkl inside it (dtrain's unpickler, fuzzed alone by torch_pickle), and the storages its
// tensors view. The input is written to a file, as load_state_dict reads a path.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

#include "tests/fuzz/fuzz_target.h"
#include "vision/torch_save/torch_checkpoint.h"

namespace {

// The file each input is written to, removed when the run ends.
struct ScratchFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("dtrain-fuzz-torch-archive-" + std::to_string(::getpid()) + ".pth");
  ~ScratchFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ScratchFile scratch;
  const std::string path = scratch.path.string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) __builtin_trap();
  dtrain::fuzz::expect_clean_errors([&] { dtrain::vision::torch_save::load_state_dict(path); });
  return 0;
}
