// The unpickler behind every .pth checkpoint a user, a config or a serving request points at
// (vision/torch_save/pickle_reader.h): the data.pkl of a torch.save archive.
#include "tests/fuzz/fuzz_target.h"
#include "vision/torch_save/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dtrain::fuzz::expect_clean_errors([&] { dtrain::vision::torch_save::read_pickle(data, size); });
  return 0;
}
