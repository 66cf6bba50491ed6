#include "metrics/tfrecord_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "metrics/crc32c.h"

namespace dtrain::metrics {
namespace {

void append_little_endian(std::string& out, std::uint64_t value, int byte_count) {
  for (int i = 0; i < byte_count; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

std::string system_error_message(const std::string& what, const std::string& path, int error) {
  return what + " '" + path + "': " + std::strerror(error);
}

}  // namespace

TFRecordWriter::TFRecordWriter(std::string path) : path_(std::move(path)) {
  // O_EXCL: two writers that somehow picked the same name fail loudly instead of
  // interleaving records in one file.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) throw MetricsError(system_error_message("cannot create event file", path_, errno));
}

TFRecordWriter::~TFRecordWriter() {
  if (fd_ >= 0) ::close(fd_);
}

TFRecordWriter::TFRecordWriter(TFRecordWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

TFRecordWriter& TFRecordWriter::operator=(TFRecordWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

std::string TFRecordWriter::frame(std::string_view data) {
  std::string record;
  record.reserve(8 + 4 + data.size() + 4);
  append_little_endian(record, data.size(), 8);
  append_little_endian(record, masked_crc32c(crc32c(record.data(), 8)), 4);
  record.append(data);
  append_little_endian(record, masked_crc32c(crc32c(data)), 4);
  return record;
}

void TFRecordWriter::write(std::string_view data) {
  if (fd_ < 0) throw MetricsError("event file '" + path_ + "' is not open (moved from)");
  // One buffer, one write() in the common case: a killed process cannot leave half a record.
  const std::string record = frame(data);
  std::size_t written = 0;
  while (written < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + written, record.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw MetricsError(system_error_message("cannot write event file", path_, errno));
    }
    written += static_cast<std::size_t>(n);
  }
}

void TFRecordWriter::flush() {
  if (fd_ < 0) throw MetricsError("event file '" + path_ + "' is not open (moved from)");
  if (::fdatasync(fd_) != 0) throw MetricsError(system_error_message("cannot flush event file", path_, errno));
}

}  // namespace dtrain::metrics
