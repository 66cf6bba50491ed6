#include "serving/model_archive.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "serving/model_error.h"

namespace dtrain::serving {
namespace {

namespace fs = std::filesystem;

constexpr size_t kBlock = 512;
constexpr uint64_t kMaxMetadataBytes = 1 << 20;  // a GNU long name or a pax header

// Sequential reads of the archive through zlib, which also reads plain files.
class ArchiveStream {
 public:
  explicit ArchiveStream(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) throw ModelError(path + ": cannot open: " + std::strerror(errno));
    gzbuffer(file_, 1 << 17);
  }
  ~ArchiveStream() { gzclose(file_); }
  ArchiveStream(const ArchiveStream&) = delete;
  ArchiveStream& operator=(const ArchiveStream&) = delete;

  // Reads up to `size` bytes; returns how many (0 at the end), throwing on a gzip error.
  size_t read_some(void* buffer, size_t size) {
    const int n = gzread(file_, buffer, static_cast<unsigned>(size));
    if (n < 0) throw ModelError(path_ + ": " + error_text());
    offset_ += static_cast<uint64_t>(n);
    return static_cast<size_t>(n);
  }

  void read_exact(void* buffer, size_t size, const std::string& what) {
    auto* out = static_cast<char*>(buffer);
    size_t done = 0;
    while (done < size) {
      const size_t n = read_some(out + done, size - done);
      if (n == 0) throw ModelError(path_ + ": truncated archive (ends inside " + what + ")");
      done += n;
    }
  }

  void skip(uint64_t size, const std::string& what) {
    std::array<char, 1 << 16> scratch;
    while (size > 0) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, scratch.size()));
      read_exact(scratch.data(), chunk, what);
      size -= chunk;
    }
  }

  uint64_t offset() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string error_text() {
    int code = 0;
    const char* message = gzerror(file_, &code);
    if (code == Z_ERRNO) return std::string("read error: ") + std::strerror(errno);
    if (code == Z_BUF_ERROR) return "truncated gzip stream (unexpected end of file)";
    return std::string("gzip error: ") + (message ? message : "unknown");
  }

  std::string path_;
  gzFile file_ = nullptr;
  uint64_t offset_ = 0;
};

uint64_t padding_of(uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

std::string field_text(const char* field, size_t size) { return std::string(field, strnlen(field, size)); }

// Octal (space or NUL terminated) or GNU base-256 (high bit set).
std::optional<uint64_t> numeric_field(const unsigned char* field, size_t size) {
  if (field[0] & 0x80) {
    if (field[0] != 0x80) return std::nullopt;  // negative or too large for us
    uint64_t value = 0;
    for (size_t i = 1; i < size; ++i) {
      if (value >> 56) return std::nullopt;
      value = (value << 8) | field[i];
    }
    return value;
  }
  uint64_t value = 0;
  size_t i = 0;
  while (i < size && field[i] == ' ') ++i;
  bool any = false;
  for (; i < size && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (value >> 60) return std::nullopt;
    value = value * 8 + static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  for (; i < size; ++i) {
    if (field[i] != ' ' && field[i] != '\0') return std::nullopt;
  }
  if (!any) return std::nullopt;
  return value;
}

bool checksum_matches(const unsigned char* header) {
  const std::optional<uint64_t> stored = numeric_field(header + 148, 8);
  if (!stored) return false;
  uint64_t sum = 0;
  for (size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? uint64_t{' '} : uint64_t{header[i]};
  return sum == *stored;
}

// The entry's name as a path relative to the destination: "./a//b/" -> "a/b",
// "./" -> "" (the destination itself). Refuses absolute names and "..".
fs::path safe_relative_path(const std::string& name, const std::string& context) {
  if (name.empty()) throw ModelError(context + ": entry with an empty name");
  if (name.front() == '/') throw ModelError(context + ": absolute path " + name + " refused");
  fs::path relative;
  size_t start = 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    const std::string part = name.substr(start, slash - start);
    if (part == "..") throw ModelError(context + ": path " + name + " refused: it contains '..'");
    if (!part.empty() && part != ".") relative /= part;
    start = slash + 1;
  }
  return relative;
}

bool is_within(const fs::path& root, const fs::path& path) {
  auto r = root.begin(), p = path.begin();
  for (; r != root.end(); ++r, ++p) {
    if (p == path.end() || *p != *r) return false;
  }
  return true;
}

// pax extended header records: "<length> <key>=<value>\n".
void read_pax_records(const std::string& data, const std::string& context, std::optional<std::string>& path,
                      std::optional<std::string>& linkpath, std::optional<uint64_t>& size) {
  size_t at = 0;
  while (at < data.size()) {
    const size_t space = data.find(' ', at);
    if (space == std::string::npos) throw ModelError(context + ": malformed pax header");
    size_t length = 0;
    for (size_t i = at; i < space; ++i) {
      if (data[i] < '0' || data[i] > '9' || length > data.size()) throw ModelError(context + ": malformed pax header");
      length = length * 10 + static_cast<size_t>(data[i] - '0');
    }
    if (length <= space - at + 1 || at + length > data.size() || data[at + length - 1] != '\n') {
      throw ModelError(context + ": malformed pax header");
    }
    const std::string record = data.substr(space + 1, at + length - 1 - (space + 1));
    const size_t equals = record.find('=');
    if (equals != std::string::npos) {
      const std::string key = record.substr(0, equals), value = record.substr(equals + 1);
      if (key == "path") path = value;
      if (key == "linkpath") linkpath = value;
      if (key == "size") {
        uint64_t decimal = 0;  // pax numbers are decimal
        if (value.empty()) throw ModelError(context + ": bad pax size");
        for (char c : value) {
          if (c < '0' || c > '9' || decimal > (uint64_t{1} << 58))
            throw ModelError(context + ": bad pax size " + value);
          decimal = decimal * 10 + static_cast<uint64_t>(c - '0');
        }
        size = decimal;
      }
    }
    at += length;
  }
}

class Unpacker {
 public:
  Unpacker(const std::string& archive, const std::string& destination, const ArchiveLimits& limits)
      : in_(archive), limits_(limits) {
    std::error_code error;
    root_ = fs::canonical(destination, error);
    if (error || !fs::is_directory(root_)) throw ModelError(destination + ": not a directory to unpack into");
  }

  void run() {
    std::optional<std::string> long_name, long_link, pax_path, pax_link;
    std::optional<uint64_t> pax_size;
    uint64_t entries = 0;
    std::array<unsigned char, kBlock> header;
    for (;;) {
      const uint64_t header_offset = in_.offset();
      in_.read_exact(header.data(), kBlock, "a header: no end-of-archive marker");
      if (std::all_of(header.begin(), header.end(), [](unsigned char b) { return b == 0; })) break;
      const std::string where = in_.path() + ": entry at byte " + std::to_string(header_offset);
      if (!checksum_matches(header.data())) {
        throw ModelError(where + ": bad header checksum (not a tar archive, or a damaged one)");
      }
      if (++entries > limits_.max_entries) {
        throw ModelError(in_.path() + ": more than " + std::to_string(limits_.max_entries) + " entries");
      }
      const char type = static_cast<char>(header[156]);
      std::optional<uint64_t> size = numeric_field(header.data() + 124, 12);
      if (!size) throw ModelError(where + ": bad size field");

      // Headers that describe the next entry.
      if (type == 'L' || type == 'K' || type == 'x' || type == 'g') {
        if (*size > kMaxMetadataBytes) throw ModelError(where + ": metadata entry too large");
        std::string data(*size, '\0');
        in_.read_exact(data.data(), data.size(), "a metadata entry");
        in_.skip(padding_of(*size), "padding");
        if (type == 'L') long_name = field_text(data.data(), data.size());
        if (type == 'K') long_link = field_text(data.data(), data.size());
        if (type == 'x') read_pax_records(data, where, pax_path, pax_link, pax_size);
        continue;  // 'g' (global pax) carries nothing a model needs
      }

      std::string name = field_text(reinterpret_cast<const char*>(header.data()), 100);
      const bool ustar = std::memcmp(header.data() + 257,
                                     "ustar\0"
                                     "00",
                                     8) == 0;
      if (ustar && header[345] != 0)
        name = field_text(reinterpret_cast<const char*>(header.data()) + 345, 155) + "/" + name;
      std::string link = field_text(reinterpret_cast<const char*>(header.data()) + 157, 100);
      if (long_name) name = *long_name;
      if (pax_path) name = *pax_path;
      if (long_link) link = *long_link;
      if (pax_link) link = *pax_link;
      if (pax_size) size = pax_size;
      long_name.reset(), long_link.reset(), pax_path.reset(), pax_link.reset(), pax_size.reset();

      const std::string context = in_.path() + ": " + name;
      const fs::path relative = safe_relative_path(name, in_.path());
      switch (type) {
        case '0':
        case '\0':
        case '7': write_file(relative, *size, header.data(), context); break;
        case '5':
          make_directory(relative, context);
          in_.skip(*size + padding_of(*size), "a directory entry");
          break;
        case '2': make_symlink(relative, link, context); break;
        case '1': make_hard_link(relative, link, context); break;
        default:
          throw ModelError(context + ": entry type '" + std::string(1, type) +
                           "' refused (a model archive holds files, directories and links)");
      }
    }
    // Read to the end so that zlib checks the gzip trailer's CRC and length.
    std::array<char, 1 << 16> rest;
    uint64_t drained = 0;
    while (drained < (uint64_t{1} << 24)) {
      const size_t n = in_.read_some(rest.data(), rest.size());
      if (n == 0) break;
      drained += n;
    }
  }

 private:
  // The directory that will hold `relative`, created, checked to resolve inside the root.
  fs::path prepare_parent(const fs::path& relative, const std::string& context) {
    const fs::path parent = (root_ / relative).parent_path();
    std::error_code error;
    fs::create_directories(parent, error);
    if (error) throw ModelError(context + ": cannot create " + parent.string() + ": " + error.message());
    const fs::path real = fs::canonical(parent, error);
    if (error || !is_within(root_, real))
      throw ModelError(context + ": refused: its directory resolves outside the model");
    return real;
  }

  // What exists at `path` now, without following a link.
  static fs::file_type existing_type(const fs::path& path) {
    std::error_code error;
    return fs::symlink_status(path, error).type();
  }

  void refuse_existing(const fs::path& target, fs::file_type allowed, const std::string& context) {
    const fs::file_type type = existing_type(target);
    if (type == fs::file_type::not_found || type == allowed) return;
    if (type == fs::file_type::symlink) throw ModelError(context + ": refused: it would write through a link");
    throw ModelError(context + ": refused: the path already exists as another kind of file");
  }

  void write_file(const fs::path& relative, uint64_t size, const unsigned char* header, const std::string& context) {
    if (relative.empty()) throw ModelError(context + ": a file entry names the archive's root");
    if (size > limits_.max_total_bytes - std::min(total_bytes_, limits_.max_total_bytes)) {
      throw ModelError(in_.path() + ": unpacks to more than " + std::to_string(limits_.max_total_bytes) +
                       " bytes (at " + relative.string() + ")");
    }
    total_bytes_ += size;
    const fs::path target = prepare_parent(relative, context) / relative.filename();
    refuse_existing(target, fs::file_type::regular, context);
    const mode_t mode = (numeric_field(header + 100, 8).value_or(0644) & 0755) | 0600;
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) throw ModelError(context + ": cannot create " + target.string() + ": " + std::strerror(errno));
    std::vector<char> buffer(1 << 16);
    uint64_t left = size;
    try {
      while (left > 0) {
        const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
        in_.read_exact(buffer.data(), chunk, relative.string());
        for (size_t done = 0; done < chunk;) {
          const ssize_t n = ::write(fd, buffer.data() + done, chunk - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) throw ModelError(context + ": cannot write " + target.string() + ": " + std::strerror(errno));
          done += static_cast<size_t>(n);
        }
        left -= chunk;
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw ModelError(context + ": cannot write " + target.string() + ": " + std::strerror(errno));
    in_.skip(padding_of(size), "padding");
  }

  void make_directory(const fs::path& relative, const std::string& context) {
    if (relative.empty()) return;  // "./": the destination itself
    const fs::path target = prepare_parent(relative, context) / relative.filename();
    refuse_existing(target, fs::file_type::directory, context);
    std::error_code error;
    fs::create_directory(target, error);
    if (error) throw ModelError(context + ": cannot create the directory: " + error.message());
  }

  // Accepted only when the target exists now and resolves inside the root:
  // since nothing is later written through or over a link, it stays so.
  void make_symlink(const fs::path& relative, const std::string& link, const std::string& context) {
    if (relative.empty()) throw ModelError(context + ": a link entry names the archive's root");
    if (link.empty() || link.front() == '/') {
      throw ModelError(context + ": symbolic link to '" + link + "' refused: it points outside the model");
    }
    const fs::path parent = prepare_parent(relative, context);
    std::error_code error;
    const fs::path resolved = fs::canonical(parent / link, error);
    if (error || !is_within(root_, resolved)) {
      throw ModelError(context + ": symbolic link to '" + link + "' refused: it points outside the model " +
                       "(or to nothing unpacked before it)");
    }
    const fs::path target = parent / relative.filename();
    refuse_existing(target, fs::file_type::not_found, context);
    fs::create_symlink(link, target, error);
    if (error) throw ModelError(context + ": cannot create the link: " + error.message());
  }

  void make_hard_link(const fs::path& relative, const std::string& link, const std::string& context) {
    if (relative.empty()) throw ModelError(context + ": a link entry names the archive's root");
    const fs::path source_relative = safe_relative_path(link, in_.path());
    std::error_code error;
    const fs::path source = fs::canonical((root_ / source_relative).parent_path(), error) / source_relative.filename();
    if (error || !is_within(root_, source) || existing_type(source) != fs::file_type::regular) {
      throw ModelError(context + ": hard link to '" + link + "' refused: not a file unpacked from this archive");
    }
    const fs::path target = prepare_parent(relative, context) / relative.filename();
    refuse_existing(target, fs::file_type::not_found, context);
    fs::create_hard_link(source, target, error);
    if (error) throw ModelError(context + ": cannot create the link: " + error.message());
  }

  ArchiveStream in_;
  ArchiveLimits limits_;
  fs::path root_;
  uint64_t total_bytes_ = 0;
};

}  // namespace

void unpack_model_archive(const std::string& archive, const std::string& destination, const ArchiveLimits& limits) {
  Unpacker(archive, destination, limits).run();
}

}  // namespace dtrain::serving
