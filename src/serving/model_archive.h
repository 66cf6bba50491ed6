#pragma once

// model.tar.gz, as SageMaker and `dtrain job run` pack a job's model
// directory, unpacked without trusting it: an archive comes from wherever the
// model was stored, so it must not be able to write outside the directory it
// is unpacked into, nor fill the disk.
#include <cstdint>
#include <string>

namespace dtrain::serving {

struct ArchiveLimits {
  uint64_t max_total_bytes = uint64_t{16} << 30;  // sum of the regular files' sizes
  uint64_t max_entries = 100000;
};

// Unpacks the tar archive at `archive` (gzip'd or plain: zlib reads both)
// into the existing directory `destination`. Reads ustar, GNU (long names,
// base-256 sizes) and pax (path, linkpath, size) headers.
//
// Refused, with a ModelError naming the archive and entry: absolute names and
// any `..` component; a symbolic link unless its target already exists inside
// `destination` (resolved through every link); a hard link unless it names a
// regular file already unpacked; writing through a link or over one; device
// files and FIFOs; more than the limits; a bad header checksum, a truncated
// archive or a gzip error. A refused archive leaves what was unpacked so far:
// the caller unpacks into a fresh directory it removes.
void unpack_model_archive(const std::string& archive, const std::string& destination, const ArchiveLimits& limits = {});

}  // namespace dtrain::serving
