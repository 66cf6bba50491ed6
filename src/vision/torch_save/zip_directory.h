// What a zip archive's central directory claims of each record, read by dtrain itself before
// LibTorch's archive reader (miniz inside PyTorchStreamReader) is asked for a record: that
// reader allocates a record's claimed size whole before it reads a byte, so a damaged or
// hostile .pth of a kilobyte could ask for gigabytes. Only the directory is read (the end of
// the file and the directory itself), not the records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dtrain::vision::torch_save {

struct ZipRecord {
  std::string name;
  std::uint16_t method = 0;  // 0 stored (torch.save's records), 8 deflated (torch::save's code)
  std::uint64_t compressed_bytes = 0;
  std::uint64_t uncompressed_bytes = 0;
  std::uint64_t local_header_offset = 0;
};

// Returns `bytes` bytes of the archive from `offset` (never past its end).
using ArchiveRead = std::function<std::string(std::uint64_t offset, std::size_t bytes)>;

// The records of the archive of `archive_bytes` bytes, in the directory's order; zip64
// archives (which torch.save writes) included. Throws CheckpointError, one line saying what
// is damaged (without the file's name, which the caller adds).
std::vector<ZipRecord> read_zip_directory(std::uint64_t archive_bytes, const ArchiveRead& read);

// Throws CheckpointError naming the first record that claims more than the archive can hold:
// compressed by a method LibTorch cannot read, claiming more than its bytes can hold (as many
// when stored; deflate expands at most 1032 times), or whose bytes run into the next record
// or past the end. So the stored records together claim at most the file's size, and the
// deflated ones (torch::save's code records, small) at most 1032 times their bytes.
void check_record_sizes(const std::vector<ZipRecord>& records, std::uint64_t archive_bytes);

// Both of the above for the file at `path` (torch.save's archives, and torch::save's that
// torch::load reads); the CheckpointError names the file.
void check_archive_sizes(const std::string& path);

}  // namespace dtrain::vision::torch_save
