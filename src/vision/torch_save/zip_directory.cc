#include "vision/torch_save/zip_directory.h"

#include <algorithm>

#include "vision/torch_save/checkpoint_error.h"

namespace dtrain::vision::torch_save {
namespace {

// The fixed parts of the zip format's records (PKWARE's APPNOTE.TXT).
constexpr std::uint32_t kEndSignature = 0x06054b50;           // end of central directory
constexpr std::uint32_t kZip64LocatorSignature = 0x07064b50;  // just before it, in zip64
constexpr std::uint32_t kZip64EndSignature = 0x06064b50;
constexpr std::uint32_t kEntrySignature = 0x02014b50;  // one record's directory entry
constexpr std::size_t kEndBytes = 22;
constexpr std::size_t kZip64LocatorBytes = 20;
constexpr std::size_t kZip64EndBytes = 56;
constexpr std::size_t kEntryBytes = 46;
constexpr std::size_t kLongestComment = 0xffff;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kSizeInZip64Extra = 0xffffffff;  // a 32-bit field that defers to the extra
constexpr std::uint64_t kDeflateLargestExpansion = 1032;

[[noreturn]] void damaged(const std::string& what) { throw CheckpointError("damaged zip archive: " + what); }

// Little-endian fields of a byte string, bounds-checked.
class Fields {
 public:
  explicit Fields(const std::string& bytes) : bytes_(bytes) {}
  std::uint64_t at(std::size_t offset, std::size_t width, const char* what) const {
    if (offset > bytes_.size() || width > bytes_.size() - offset) damaged(std::string(what) + " runs past its end");
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < width; ++i) {
      value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[offset + i])) << (8 * i);
    }
    return value;
  }

 private:
  const std::string& bytes_;
};

struct DirectoryPlace {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::uint64_t entries = 0;
};

// Where the end-of-directory record says the directory is: the last signature in the file's
// final 64 KiB (a comment may follow the record), and in zip64 the record its locator names.
DirectoryPlace find_directory(std::uint64_t archive_bytes, const ArchiveRead& read) {
  if (archive_bytes < kEndBytes) damaged("shorter than an end-of-directory record");
  const std::uint64_t tail_start = archive_bytes - std::min<std::uint64_t>(archive_bytes, kEndBytes + kLongestComment);
  const std::string tail = read(tail_start, static_cast<std::size_t>(archive_bytes - tail_start));
  const Fields fields(tail);
  std::size_t end = tail.size() - kEndBytes + 1;
  do {
    if (end-- == 0) damaged("no end-of-directory record");
  } while (fields.at(end, 4, "the end") != kEndSignature);
  DirectoryPlace place{fields.at(end + 16, 4, "the end record"), fields.at(end + 12, 4, "the end record"),
                       fields.at(end + 10, 2, "the end record")};
  if (end >= kZip64LocatorBytes &&
      fields.at(end - kZip64LocatorBytes, 4, "the zip64 locator") == kZip64LocatorSignature) {
    const std::uint64_t zip64_end = fields.at(end - kZip64LocatorBytes + 8, 8, "the zip64 locator");
    if (zip64_end > archive_bytes || kZip64EndBytes > archive_bytes - zip64_end) {
      damaged("the zip64 end record is placed past the end of the file");
    }
    const std::string record = read(zip64_end, kZip64EndBytes);
    const Fields zip64(record);
    if (zip64.at(0, 4, "the zip64 end record") != kZip64EndSignature)
      damaged("no zip64 end record where its locator points");
    place = {zip64.at(48, 8, "the zip64 end record"), zip64.at(40, 8, "the zip64 end record"),
             zip64.at(32, 8, "the zip64 end record")};
  }
  if (place.offset > archive_bytes || place.bytes > archive_bytes - place.offset) {
    damaged("the central directory (" + std::to_string(place.bytes) + " bytes at " + std::to_string(place.offset) +
            ") lies past the end of the file");
  }
  if (place.entries > place.bytes / kEntryBytes) {
    damaged(std::to_string(place.entries) + " records claimed in a directory of " + std::to_string(place.bytes) +
            " bytes");
  }
  return place;
}

// The 64-bit sizes and offset of an entry whose 32-bit fields defer to its zip64 extra field.
void read_zip64_extra(const Fields& fields, std::size_t extra, std::size_t extra_bytes, ZipRecord& record) {
  for (std::size_t at = extra; at + 4 <= extra + extra_bytes;) {
    const std::uint64_t id = fields.at(at, 2, "an extra field");
    const std::size_t bytes = fields.at(at + 2, 2, "an extra field");
    if (id == kZip64ExtraId) {
      std::size_t value = at + 4;
      for (std::uint64_t* field : {&record.uncompressed_bytes, &record.compressed_bytes, &record.local_header_offset}) {
        if (*field != kSizeInZip64Extra) continue;
        if (value + 8 > at + 4 + bytes) damaged("record '" + record.name + "': its zip64 field is too short");
        *field = fields.at(value, 8, "a zip64 field");
        value += 8;
      }
      return;
    }
    at += 4 + bytes;
  }
}

}  // namespace

std::vector<ZipRecord> read_zip_directory(std::uint64_t archive_bytes, const ArchiveRead& read) {
  const DirectoryPlace place = find_directory(archive_bytes, read);
  const std::string directory = read(place.offset, static_cast<std::size_t>(place.bytes));
  const Fields fields(directory);
  std::vector<ZipRecord> records;
  records.reserve(static_cast<std::size_t>(place.entries));
  std::size_t at = 0;
  for (std::uint64_t entry = 0; entry < place.entries; ++entry) {
    if (fields.at(at, 4, "the central directory") != kEntrySignature) {
      damaged("directory entry " + std::to_string(entry) + " has no entry signature");
    }
    const std::size_t name_bytes = fields.at(at + 28, 2, "a directory entry");
    const std::size_t extra_bytes = fields.at(at + 30, 2, "a directory entry");
    const std::size_t comment_bytes = fields.at(at + 32, 2, "a directory entry");
    if (at + kEntryBytes + name_bytes + extra_bytes + comment_bytes > directory.size()) {
      damaged("directory entry " + std::to_string(entry) + " runs past the directory's end");
    }
    ZipRecord record;
    record.name = directory.substr(at + kEntryBytes, name_bytes);
    record.method = static_cast<std::uint16_t>(fields.at(at + 10, 2, "a directory entry"));
    record.compressed_bytes = fields.at(at + 20, 4, "a directory entry");
    record.uncompressed_bytes = fields.at(at + 24, 4, "a directory entry");
    record.local_header_offset = fields.at(at + 42, 4, "a directory entry");
    read_zip64_extra(fields, at + kEntryBytes + name_bytes, extra_bytes, record);
    records.push_back(std::move(record));
    at += kEntryBytes + name_bytes + extra_bytes + comment_bytes;
  }
  return records;
}

void check_record_sizes(const std::vector<ZipRecord>& records, std::uint64_t archive_bytes) {
  for (const ZipRecord& record : records) {
    const std::string claim = "record '" + record.name + "' claims ";
    if (record.method != 0 && record.method != 8) {
      damaged("record '" + record.name + "' is compressed with method " + std::to_string(record.method) +
              " (LibTorch reads stored and deflated records only)");
    }
    if (record.local_header_offset > archive_bytes ||
        record.compressed_bytes > archive_bytes - record.local_header_offset) {
      damaged(claim + std::to_string(record.compressed_bytes) + " bytes at offset " +
              std::to_string(record.local_header_offset) + " of a file of " + std::to_string(archive_bytes));
    }
    const std::uint64_t most =
        record.method == 0 ? record.compressed_bytes : record.compressed_bytes * kDeflateLargestExpansion;
    if (record.uncompressed_bytes > most) {
      damaged(claim + std::to_string(record.uncompressed_bytes) + " bytes uncompressed from " +
              std::to_string(record.compressed_bytes) + (record.method == 0 ? " stored" : " deflated"));
    }
  }
}

}  // namespace dtrain::vision::torch_save
