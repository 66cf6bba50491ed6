// The bodies of the rendezvous store's batched wait: a client's key list (what the launcher's
// store parses from any process that knows the job token) and the store's answer (what a rank
// parses). The first byte picks how many values the answer is read as.
#include "rendezvous/key_batch.h"
#include "rendezvous/protocol.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes = dtrain::fuzz::as_text(data, size);
  dtrain::fuzz::expect_clean_errors([&] {
    const std::vector<std::string> keys = dtrain::rendezvous::parse_key_list(bytes, dtrain::rendezvous::kMaxWaitKeys);
    // What the store relies on: every key it looks up is one it could have been given.
    for (const std::string& key : keys) {
      if (!dtrain::rendezvous::is_valid_key(key)) __builtin_trap();
    }
  });
  if (size == 0) return 0;
  dtrain::fuzz::expect_clean_errors([&] {
    const std::size_t count = data[0];
    const std::vector<std::string> values = dtrain::rendezvous::decode_values(bytes.substr(1), count);
    // Decoded values re-encode to exactly the answer: nothing read past it or skipped.
    if (values.size() != count || dtrain::rendezvous::encode_values(values) != bytes.substr(1)) __builtin_trap();
  });
  return 0;
}
