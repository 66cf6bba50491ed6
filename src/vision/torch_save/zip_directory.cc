#include "vision/torch_save/zip_directory.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "vision/torch_save/checkpoint_error.h"

namespace dtrain::vision::torch_save {
namespace {

// The records of the zip format that hold the directory (PKWARE's APPNOTE.TXT): each
// signature, size and field offset.
namespace end_record {  // end of central directory
constexpr std::uint32_t kSignature = 0x06054b50;
constexpr std::size_t kBytes = 22;
constexpr std::size_t kEntries = 10, kDirectoryBytes = 12, kDirectoryOffset = 16;
constexpr std::size_t kLongestComment = 0xffff;
}  // namespace end_record
namespace zip64_locator {  // just before the end record, in a zip64 archive
constexpr std::uint32_t kSignature = 0x07064b50;
constexpr std::size_t kBytes = 20;
constexpr std::size_t kEndRecordOffset = 8;
}  // namespace zip64_locator
namespace zip64_end_record {
constexpr std::uint32_t kSignature = 0x06064b50;
constexpr std::size_t kBytes = 56;
constexpr std::size_t kEntries = 32, kDirectoryBytes = 40, kDirectoryOffset = 48;
}  // namespace zip64_end_record
namespace entry {  // one record's entry in the central directory
constexpr std::uint32_t kSignature = 0x02014b50;
constexpr std::size_t kBytes = 46;
constexpr std::size_t kMethod = 10, kCompressedBytes = 20, kUncompressedBytes = 24, kNameBytes = 28, kExtraBytes = 30,
                      kCommentBytes = 32, kLocalHeaderOffset = 42;
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kInZip64Extra = 0xffffffff;  // a 32-bit field whose value is in the zip64 extra
}  // namespace entry
constexpr std::size_t kLocalHeaderBytes = 30;  // before the record's name, extra field and bytes
constexpr std::uint16_t kStored = 0;
constexpr std::uint16_t kDeflated = 8;
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

// Where the end record says the directory is: the last end signature in the file's final
// 64 KiB (a comment may follow the record), and in zip64 the record its locator names.
DirectoryPlace find_directory(std::uint64_t archive_bytes, const ArchiveRead& read) {
  if (archive_bytes < end_record::kBytes) damaged("shorter than an end-of-directory record");
  const std::uint64_t tail_start =
      archive_bytes - std::min<std::uint64_t>(archive_bytes, end_record::kBytes + end_record::kLongestComment);
  const std::string tail = read(tail_start, static_cast<std::size_t>(archive_bytes - tail_start));
  const Fields fields(tail);
  std::size_t end = tail.size() - end_record::kBytes + 1;
  do {
    if (end-- == 0) damaged("no end-of-directory record");
  } while (fields.at(end, 4, "the end") != end_record::kSignature);
  DirectoryPlace place{fields.at(end + end_record::kDirectoryOffset, 4, "the end record"),
                       fields.at(end + end_record::kDirectoryBytes, 4, "the end record"),
                       fields.at(end + end_record::kEntries, 2, "the end record")};

  const std::uint64_t end_in_file = tail_start + end;
  if (end_in_file < zip64_locator::kBytes) return place;
  const std::string locator = read(end_in_file - zip64_locator::kBytes, zip64_locator::kBytes);
  const Fields locator_fields(locator);
  if (locator_fields.at(0, 4, "the zip64 locator") != zip64_locator::kSignature) return place;
  const std::uint64_t zip64_end = locator_fields.at(zip64_locator::kEndRecordOffset, 8, "the zip64 locator");
  if (zip64_end > archive_bytes || zip64_end_record::kBytes > archive_bytes - zip64_end) {
    damaged("the zip64 end record is placed past the end of the file");
  }
  const std::string record = read(zip64_end, zip64_end_record::kBytes);
  const Fields zip64(record);
  if (zip64.at(0, 4, "the zip64 end record") != zip64_end_record::kSignature) {
    damaged("no zip64 end record where its locator points");
  }
  return {zip64.at(zip64_end_record::kDirectoryOffset, 8, "the zip64 end record"),
          zip64.at(zip64_end_record::kDirectoryBytes, 8, "the zip64 end record"),
          zip64.at(zip64_end_record::kEntries, 8, "the zip64 end record")};
}

// The 64-bit sizes and offset of an entry whose 32-bit fields defer to its zip64 extra field,
// in the extra field's order: uncompressed size, compressed size, local header offset.
void read_zip64_extra(const Fields& fields, std::size_t extra, std::size_t extra_bytes, ZipRecord& record) {
  const std::size_t extra_end = extra + extra_bytes;
  for (std::size_t at = extra; at + 4 <= extra_end;) {
    const std::uint64_t id = fields.at(at, 2, "an extra field");
    const std::size_t field_end = std::min(at + 4 + fields.at(at + 2, 2, "an extra field"), extra_end);
    if (id == entry::kZip64ExtraId) {
      std::size_t value = at + 4;
      for (std::uint64_t* field : {&record.uncompressed_bytes, &record.compressed_bytes, &record.local_header_offset}) {
        if (*field != entry::kInZip64Extra) continue;
        if (value + 8 > field_end) damaged("record '" + record.name + "': its zip64 field is too short");
        *field = fields.at(value, 8, "a zip64 field");
        value += 8;
      }
      return;
    }
    at = field_end;
  }
}

}  // namespace

std::vector<ZipRecord> read_zip_directory(std::uint64_t archive_bytes, const ArchiveRead& read) {
  const DirectoryPlace place = find_directory(archive_bytes, read);
  if (place.offset > archive_bytes || place.bytes > archive_bytes - place.offset) {
    damaged("the central directory (" + std::to_string(place.bytes) + " bytes at " + std::to_string(place.offset) +
            ") lies past the end of the file");
  }
  if (place.entries > place.bytes / entry::kBytes) {
    damaged(std::to_string(place.entries) + " records claimed in a directory of " + std::to_string(place.bytes) +
            " bytes");
  }
  const std::string directory = read(place.offset, static_cast<std::size_t>(place.bytes));
  const Fields fields(directory);
  std::vector<ZipRecord> records;
  records.reserve(static_cast<std::size_t>(place.entries));
  std::size_t at = 0;
  for (std::uint64_t index = 0; index < place.entries; ++index) {
    if (fields.at(at, 4, "the central directory") != entry::kSignature) {
      damaged("directory entry " + std::to_string(index) + " has no entry signature");
    }
    const std::size_t name_bytes = fields.at(at + entry::kNameBytes, 2, "a directory entry");
    const std::size_t extra_bytes = fields.at(at + entry::kExtraBytes, 2, "a directory entry");
    const std::size_t comment_bytes = fields.at(at + entry::kCommentBytes, 2, "a directory entry");
    if (at + entry::kBytes + name_bytes + extra_bytes + comment_bytes > directory.size()) {
      damaged("directory entry " + std::to_string(index) + " runs past the directory's end");
    }
    ZipRecord record;
    record.name = directory.substr(at + entry::kBytes, name_bytes);
    record.method = static_cast<std::uint16_t>(fields.at(at + entry::kMethod, 2, "a directory entry"));
    record.compressed_bytes = fields.at(at + entry::kCompressedBytes, 4, "a directory entry");
    record.uncompressed_bytes = fields.at(at + entry::kUncompressedBytes, 4, "a directory entry");
    record.local_header_offset = fields.at(at + entry::kLocalHeaderOffset, 4, "a directory entry");
    read_zip64_extra(fields, at + entry::kBytes + name_bytes, extra_bytes, record);
    records.push_back(std::move(record));
    at += entry::kBytes + name_bytes + extra_bytes + comment_bytes;
  }
  return records;
}

void check_record_sizes(const std::vector<ZipRecord>& records, std::uint64_t archive_bytes) {
  std::vector<const ZipRecord*> in_file_order;
  for (const ZipRecord& record : records) {
    if (record.method != kStored && record.method != kDeflated) {
      damaged("record '" + record.name + "' is compressed with method " + std::to_string(record.method) +
              " (LibTorch reads stored and deflated records only)");
    }
    const bool stored = record.method == kStored;
    // Compressed bytes beyond the file are refused below; capped at its size here, the
    // product cannot overflow for any file that exists.
    const std::uint64_t most =
        stored ? record.compressed_bytes : std::min(record.compressed_bytes, archive_bytes) * kDeflateLargestExpansion;
    if (record.uncompressed_bytes > most) {
      damaged("record '" + record.name + "' claims " + std::to_string(record.uncompressed_bytes) + " bytes from " +
              std::to_string(record.compressed_bytes) + (stored ? " stored" : " deflated"));
    }
    in_file_order.push_back(&record);
  }
  // Each record's header, name and bytes end before the next record starts (its own extra
  // field and any data descriptor only add to that): so the records together claim no more
  // than the file holds, however many there are.
  std::sort(in_file_order.begin(), in_file_order.end(),
            [](const ZipRecord* a, const ZipRecord* b) { return a->local_header_offset < b->local_header_offset; });
  for (std::size_t i = 0; i < in_file_order.size(); ++i) {
    const ZipRecord& record = *in_file_order[i];
    const std::uint64_t limit =
        i + 1 < in_file_order.size() ? in_file_order[i + 1]->local_header_offset : archive_bytes;
    const std::uint64_t start = record.local_header_offset;
    const std::uint64_t header = kLocalHeaderBytes + record.name.size();
    if (start > limit || header > limit - start || record.compressed_bytes > limit - start - header) {
      damaged("record '" + record.name + "' claims " + std::to_string(record.compressed_bytes) + " bytes at offset " +
              std::to_string(start) + ", more than lie between it and " +
              (i + 1 < in_file_order.size() ? "the next record" : "the end of the file") + " (" +
              std::to_string(limit) + ")");
    }
  }
}

void check_archive_sizes(const std::string& path) {
  std::error_code error;
  const std::uint64_t file_bytes = std::filesystem::file_size(path, error);
  if (error) throw CheckpointError("checkpoint '" + path + "': cannot read its size: " + error.message());
  std::ifstream in(path, std::ios::binary);
  const ArchiveRead read = [&in](std::uint64_t offset, std::size_t bytes) {
    std::string part(bytes, '\0');
    in.clear();
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(part.data(), static_cast<std::streamsize>(bytes));
    part.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return part;
  };
  try {
    check_record_sizes(read_zip_directory(file_bytes, read), file_bytes);
  } catch (const CheckpointError& e) {
    fail_checkpoint(path, e.what());
  }
}

}  // namespace dtrain::vision::torch_save
