// The zip directory reader dtrain runs on every .pth before LibTorch's archive reader
// (vision/torch_save/zip_directory.h), fed a whole file. What it lets through must be what
// the file can hold: LibTorch then allocates each record's claimed size, so the stored records
// it passes together claim no more than the file's size, the deflated ones at most 1032 times.
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_target.h"
#include "vision/torch_save/zip_directory.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string archive(reinterpret_cast<const char*>(data), size);
  dtrain::fuzz::expect_clean_errors([&] {
    using dtrain::vision::torch_save::ZipRecord;
    const auto records =
        dtrain::vision::torch_save::read_zip_directory(size, [&](std::uint64_t offset, std::size_t bytes) {
          if (offset > size || bytes > size - offset) __builtin_trap();  // asked past the end
          return archive.substr(offset, bytes);
        });
    dtrain::vision::torch_save::check_record_sizes(records, size);
    std::uint64_t stored = 0, deflated = 0;  // what LibTorch would allocate for them
    for (const ZipRecord& record : records) (record.method == 0 ? stored : deflated) += record.uncompressed_bytes;
    if (stored > size || deflated > 1032 * std::uint64_t{size}) __builtin_trap();
  });
  return 0;
}
