// Appends records to a file in TFRecord framing, the container of TensorBoard event files:
//
//   uint64 length          little-endian
//   uint32 masked_crc32c(the 8 length bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// Each record reaches the operating system in one write() before write() returns, so a
// process that is killed leaves only whole records behind (readers stop at a short tail).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace dtrain::metrics {

// Every failure of the metrics layer: the message names the file or directory and the
// reason (strerror for failed system calls).
class MetricsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TFRecordWriter {
 public:
  // Creates `path`; refuses to overwrite an existing file. Throws MetricsError.
  explicit TFRecordWriter(std::string path);
  ~TFRecordWriter();
  TFRecordWriter(TFRecordWriter&& other) noexcept;
  TFRecordWriter& operator=(TFRecordWriter&& other) noexcept;
  TFRecordWriter(const TFRecordWriter&) = delete;
  TFRecordWriter& operator=(const TFRecordWriter&) = delete;

  // Frames `data` and hands the whole record to the OS. Throws MetricsError.
  void write(std::string_view data);
  // Records are already with the OS; this also asks it to put them on disk (fdatasync), so
  // they survive a machine crash too. Throws MetricsError.
  void flush();

  const std::string& path() const { return path_; }

  // The framed bytes of one record (what write() appends), for tests and tools.
  static std::string frame(std::string_view data);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace dtrain::metrics
