// The runtime's control messages between ranks (runtime/message.h): a rank's cycle report and
// the coordinator's plan, as they arrive from a peer. The first byte picks which; a message
// that decodes must encode back to one that decodes again.
#include <vector>

#include "runtime/message.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::vector<char> message(data + 1, data + size);
  dtrain::fuzz::expect_clean_errors([&] {
    if (data[0] % 2 == 0) {
      dtrain::runtime::decode_report(dtrain::runtime::encode(dtrain::runtime::decode_report(message)));
    } else {
      dtrain::runtime::decode_plan(dtrain::runtime::encode(dtrain::runtime::decode_plan(message)));
    }
  });
  return 0;
}
