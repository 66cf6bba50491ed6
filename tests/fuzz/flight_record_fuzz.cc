// A rank's flight record as `dtrain run` reads it off the rank's stderr (any bytes a program
// may print after the prefix), and the verdict drawn from it beside a fixed rank 0's record.
#include "flight_record/flight_record.h"
#include "flight_record/hang_verdict.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = dtrain::fuzz::as_text(data, size);
  dtrain::fuzz::expect_clean_errors([&] {
    dtrain::flight_record::RankRecord rank0;
    rank0.size = 4;
    rank0.collectives.push_back({.sequence = 0, .name = "step.a", .operation = "allreduce", .submitted_us = 5});
    const dtrain::flight_record::RankRecord parsed = dtrain::flight_record::parse_rank_record(text);
    dtrain::flight_record::hang_verdict({rank0, parsed}, 4);
    dtrain::flight_record::to_json(parsed);
  });
  return 0;
}
