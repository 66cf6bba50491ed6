// save_state_dict: the pickle torch.save would write for an OrderedDict of
// tensors, the zip archive around it, and the atomic replacement of the file.
#include <caffe2/serialize/inline_container.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <unordered_set>

#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/pickle_writer.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/torch_save/torch_error_message.h"
#include "vision/torch_save/torch_storage_types.h"

namespace dtrain::vision::torch_save {
namespace {

// Python decodes BINUNICODE as strict UTF-8; a name that is not would make
// torch.load fail far from here.
bool is_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      extra = 1, code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2, code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // cut short
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are invalid.
    static constexpr std::uint32_t kMinimum[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinimum[extra] || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return false;
    i += extra + 1;
  }
  return true;
}

struct PreparedTensor {
  const std::string* name;
  at::Tensor data;  // contiguous, on the CPU
  std::string storage_class;
  bool requires_grad;
};

std::vector<PreparedTensor> prepare(const std::string& path, const StateDict& state) {
  std::vector<PreparedTensor> out;
  std::unordered_set<std::string> seen;
  for (const NamedTensor& entry : state) {
    const std::string& name = entry.name;
    if (!seen.insert(name).second) fail_checkpoint(path, "tensor name '" + name + "' appears twice");
    if (!is_utf8(name)) fail_checkpoint(path, "tensor name '" + name + "' is not valid UTF-8");
    const at::Tensor& t = entry.tensor;
    if (!t.defined()) fail_checkpoint(path, "tensor '" + name + "' is undefined");
    if (t.layout() != at::kStrided || t.is_quantized()) {
      fail_checkpoint(path,
                      "tensor '" + name + "' is not a dense tensor; only strided, unquantized tensors are written");
    }
    auto storage_class = storage_class_of_dtype(t.scalar_type());
    if (!storage_class) {
      fail_checkpoint(path, "tensor '" + name + "' has dtype " + at::toString(t.scalar_type()) +
                                ", which has no torch storage class here");
    }
    out.push_back({&name, t.detach().to(at::kCPU).contiguous(), std::move(*storage_class), t.requires_grad()});
  }
  return out;
}

// Row-major strides of a contiguous tensor. A contiguous tensor's own strides
// may differ in dimensions of size one, which nobody reading the file should
// have to think about.
std::vector<std::int64_t> row_major_strides(at::IntArrayRef sizes) {
  std::vector<std::int64_t> strides(sizes.size());
  std::int64_t step = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = step;
    step *= std::max<std::int64_t>(sizes[d], 1);
  }
  return strides;
}

// The data.pkl that torch.save(OrderedDict) writes: OrderedDict() then its
// items, each tensor as _rebuild_tensor_v2(storage, 0, size, stride,
// requires_grad, OrderedDict()) whose storage is the persistent id
// ('storage', torch.XStorage, "<i>", "cpu", numel) of record data/<i>.
std::string pickle_state_dict(const std::vector<PreparedTensor>& tensors) {
  PickleWriter w;
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  if (!tensors.empty()) {
    w.mark();
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const PreparedTensor& t = tensors[i];
      w.string(*t.name);
      w.global("torch._utils", "_rebuild_tensor_v2");
      w.mark();
      w.mark();
      w.string("storage");
      w.global("torch", t.storage_class);
      w.string(std::to_string(i));
      w.string("cpu");
      w.integer(t.data.numel());
      w.tuple_from_mark();
      w.persistent_id();
      w.integer(0);
      w.int_tuple(t.data.sizes().vec());
      w.int_tuple(row_major_strides(t.data.sizes()));
      w.boolean(t.requires_grad);
      w.global("collections", "OrderedDict");  // backward hooks: none
      w.empty_tuple();
      w.reduce();
      w.tuple_from_mark();
      w.reduce();
    }
    w.set_items();
  }
  return w.finish();
}

// The temporary file next to the target. The writer callback cannot report a
// failure without PyTorchStreamWriter throwing from inside miniz (and again
// from its destructor), so it remembers the first error and the caller
// checks it once the archive is complete.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& target) {
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
      path_ = target + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
      // 0666 less the umask, as torch.save's files get.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0)
      fail_checkpoint(target, "cannot create a temporary file next to it: " + std::string(std::strerror(errno)));
  }
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!renamed_) ::unlink(path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  std::size_t write(const void* data, std::size_t n) {
    const char* p = static_cast<const char*>(data);
    std::size_t left = n;
    while (left > 0 && error_ == 0) {
      const ssize_t written = ::write(fd_, p, left);
      if (written < 0) {
        if (errno != EINTR) error_ = errno;
        continue;
      }
      p += written;
      left -= static_cast<std::size_t>(written);
    }
    return n;
  }

  // Flushes, closes and renames over `target`, then flushes the directory
  // entry so the rename itself survives a crash.
  void commit(const std::string& target) {
    if (error_ == 0 && ::fsync(fd_) != 0) error_ = errno;
    if (::close(fd_) != 0 && error_ == 0) error_ = errno;
    fd_ = -1;
    if (error_ != 0) fail_checkpoint(target, "write failed: " + std::string(std::strerror(error_)));
    if (::rename(path_.c_str(), target.c_str()) != 0) {
      fail_checkpoint(target, "cannot rename the temporary file over it: " + std::string(std::strerror(errno)));
    }
    renamed_ = true;
    std::filesystem::path dir = std::filesystem::path(target).parent_path();
    if (dir.empty()) dir = ".";
    // Best effort: the data is already safe in the file; some file systems
    // refuse fsync on a directory.
    const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  int error_ = 0;
  bool renamed_ = false;
};

}  // namespace

void save_state_dict(const std::string& path, const StateDict& state) {
  const std::vector<PreparedTensor> tensors = prepare(path, state);
  const std::string pickle = pickle_state_dict(tensors);
  TemporaryFile file(path);
  try {
    // This constructor names the archive's folder "archive" rather than after
    // the (temporary) file; readers take whatever folder the records are in.
    caffe2::serialize::PyTorchStreamWriter writer(
        [&file](const void* data, std::size_t n) { return file.write(data, n); });
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    // What torch.save (2.x) adds beside the writer's own "byteorder" and serialization id: the
    // format's version and the records' alignment (the writer aligns them to 64 bytes).
    writer.writeRecord(".format_version", "1", 1);
    writer.writeRecord(".storage_alignment", "64", 2);
    static const char kNoBytes = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      const at::Tensor& t = tensors[i].data;
      const void* bytes = t.numel() > 0 ? t.data_ptr() : &kNoBytes;
      writer.writeRecord("data/" + std::to_string(i), bytes, t.nbytes());
    }
    writer.writeEndOfFile();  // also writes the "version" record
  } catch (const std::exception& e) {
    fail_checkpoint(path, "cannot write the archive: " + torch_error_message(e));
  }
  file.commit(path);
}

}  // namespace dtrain::vision::torch_save
