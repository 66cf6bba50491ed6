// Rank-0 checkpoints. The payload is LibTorch's own archive (model tensors, optimizer
// archive, counters, RNG state); the file frames it with a magic, the payload length and a
// CRC32, so truncation and damage are detected. Writes go to a temporary file that is
// fsynced and renamed, so a crash at any moment leaves either the old set of checkpoints or
// the new one, never a partial file under a checkpoint's name.
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dtrain/torch.h"
#include "torch/optimizer_state.h"

namespace dtrain::libtorch {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'T', 'R', 'C', 'K', 'P', 'T', '1'};
constexpr std::size_t kHeaderSize = sizeof(kMagic) + sizeof(std::uint64_t) + sizeof(std::uint32_t);
constexpr const char* kPrefix = "checkpoint-";
constexpr const char* kSuffix = ".dtrain";

std::uint32_t crc_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

void write_fully(int fd, const char* data, std::size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error("dtrain: writing checkpoint '" + path + "' failed: " + std::strerror(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// Reads and verifies a checkpoint file; returns the payload.
std::string read_verified(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("dtrain: cannot open checkpoint '" + path + "'");
  std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < kHeaderSize || std::memcmp(file.data(), kMagic, sizeof(kMagic)) != 0) {
    throw Error("dtrain: '" + path + "' is not a dtrain checkpoint or is truncated (" + std::to_string(file.size()) +
                " bytes)");
  }
  std::uint64_t length;
  std::uint32_t crc;
  std::memcpy(&length, file.data() + sizeof(kMagic), sizeof(length));
  std::memcpy(&crc, file.data() + sizeof(kMagic) + sizeof(length), sizeof(crc));
  if (file.size() - kHeaderSize != length) {
    throw Error("dtrain: checkpoint '" + path + "' is truncated: header says " + std::to_string(length) +
                " payload bytes, file has " + std::to_string(file.size() - kHeaderSize));
  }
  std::string payload = file.substr(kHeaderSize);
  if (crc_of(payload) != crc) throw Error("dtrain: checkpoint '" + path + "' is corrupt (CRC32 mismatch)");
  return payload;
}

}  // namespace

Checkpointer::Checkpointer(std::string directory, int keep_last, int rank)
    : directory_(std::move(directory)), keep_last_(keep_last), rank_(rank) {
  if (keep_last_ < 1) throw Error("dtrain::Checkpointer: keep_last must be at least 1");
}

int Checkpointer::my_rank() const { return rank_ >= 0 ? rank_ : rank(); }

std::vector<std::string> Checkpointer::list() const {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(directory_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) == 0 && name.size() > std::strlen(kSuffix) &&
        name.compare(name.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0) {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());  // zero-padded step numbers sort in time order
  return paths;
}

void Checkpointer::save(const torch::nn::Module& model, const torch::optim::Optimizer& optimizer,
                        const TrainingProgress& progress) const {
  if (my_rank() != 0) return;
  torch::serialize::OutputArchive archive;
  for (const auto& [name, tensor] : named_state(model)) archive.write("model." + name, tensor.detach().to(at::kCPU));
  torch::serialize::OutputArchive optimizer_archive;
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("progress.epoch", c10::IValue(progress.epoch));
  archive.write("progress.step", c10::IValue(progress.step));
  archive.write("rng.cpu", at::detail::getDefaultCPUGenerator().get_state());
  std::ostringstream out;
  archive.save_to(out);
  const std::string payload = out.str();

  fs::create_directories(directory_);
  char name[64];
  std::snprintf(name, sizeof(name), "%s%012lld%s", kPrefix, static_cast<long long>(progress.step), kSuffix);
  const fs::path final_path = fs::path(directory_) / name;
  const fs::path temporary = fs::path(directory_) / (std::string(".") + name + ".tmp");
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error("dtrain: cannot create '" + temporary.string() + "': " + std::strerror(errno));
  try {
    const std::uint64_t length = payload.size();
    const std::uint32_t crc = crc_of(payload);
    write_fully(fd, kMagic, sizeof(kMagic), temporary);
    write_fully(fd, reinterpret_cast<const char*>(&length), sizeof(length), temporary);
    write_fully(fd, reinterpret_cast<const char*>(&crc), sizeof(crc), temporary);
    write_fully(fd, payload.data(), payload.size(), temporary);
    if (::fsync(fd) != 0) throw Error("dtrain: fsync of '" + temporary.string() + "' failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    fs::remove(temporary);
    throw;
  }
  ::close(fd);
  fs::rename(temporary, final_path);
  fsync_directory(directory_);

  auto existing = list();
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep_last_) < existing.size(); ++i) fs::remove(existing[i]);
}

std::optional<TrainingProgress> Checkpointer::restore(torch::nn::Module& model,
                                                      torch::optim::Optimizer& optimizer) const {
  // Rank 0 reads and verifies; the outcome (payload, nothing, or the error) goes to every
  // rank, so a bad checkpoint fails all ranks with the same message.
  std::string message;
  if (my_rank() == 0) {
    const auto paths = list();
    if (paths.empty()) {
      message = "N";
    } else {
      try {
        message = "P" + read_verified(paths.back());
      } catch (const Error& e) {
        message = std::string("E") + e.what();
      }
    }
  }
  if (rank_ >= 0) {
    if (rank_ != 0) return std::nullopt;  // without the runtime only rank 0 restores
  } else {
    message = broadcast_bytes(message, 0, "checkpoint.restore");
  }
  if (message.empty()) throw Error("dtrain: empty checkpoint message from rank 0");
  if (message[0] == 'N') return std::nullopt;
  if (message[0] == 'E') throw Error(message.substr(1));

  const std::string source = my_rank() == 0 ? list().back() : "the checkpoint broadcast by rank 0";
  try {
    torch::serialize::InputArchive archive;
    std::istringstream in(message.substr(1));
    // Saved on the CPU; loaded where the model is, so the optimizer's state (momentum, Adam's
    // moments) lands beside the parameters it updates.
    archive.load_from(in, parameters_device(optimizer));
    torch::NoGradGuard no_grad;
    for (auto& [name, tensor] : named_state(model)) {
      at::Tensor value;
      if (!archive.try_read("model." + name, value)) {
        throw Error("dtrain: checkpoint " + source + " has no tensor 'model." + name + "' (another model?)");
      }
      if (value.sizes() != tensor.sizes()) {
        throw Error("dtrain: checkpoint " + source + ": 'model." + name + "' has shape " + c10::str(value.sizes()) +
                    " but the model's is " + c10::str(tensor.sizes()));
      }
      tensor.copy_(value);
    }
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    load_optimizer_state(optimizer, optimizer_archive);
    c10::IValue epoch, step;
    archive.read("progress.epoch", epoch);
    archive.read("progress.step", step);
    if (my_rank() == 0) {
      at::Tensor rng;
      archive.read("rng.cpu", rng);
      at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the default's state
      generator.set_state(rng.to(at::kCPU));
    }
    return TrainingProgress{epoch.toInt(), step.toInt()};
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error("dtrain: cannot load checkpoint " + source + ": " + e.what());
  }
}

}  // namespace dtrain::libtorch
