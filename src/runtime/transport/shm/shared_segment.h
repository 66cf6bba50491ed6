// A POSIX shared-memory segment that the ranks of one host map together. The creator names
// it after the job, and unlinks it as soon as every local rank has mapped it, so a crash
// afterwards leaves nothing behind; a crash before that leaves a segment whose creator pid
// is dead, which the next job's creator removes (see remove_stale_segments).
#pragma once

#include <cstddef>
#include <string>

namespace dtrain::runtime {

class SharedSegment {
 public:
  static constexpr const char* kNamePrefix = "dtrain-";

  // Creates (and maps) a new segment of `bytes`; fails if the name exists.
  static SharedSegment create(const std::string& name, std::size_t bytes);
  // Maps an existing segment created by another local rank.
  static SharedSegment open(const std::string& name, std::size_t bytes);

  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&& other) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& name() const { return name_; }

  // Removes the name (the mapping stays valid). Idempotent.
  void unlink();

 private:
  SharedSegment(std::string name, void* data, std::size_t size) : name_(std::move(name)), data_(data), size_(size) {}
  std::string name_;
  void* data_ = nullptr;
  std::size_t size_ = 0;
  bool linked_ = true;
};

// Removes dtrain segments in /dev/shm whose creating process no longer exists. Returns how
// many were removed.
int remove_stale_segments();

}  // namespace dtrain::runtime
