// load_state_dict: the zip archive, the pickle, the state dict inside it, and
// the storages its tensors view.
#include <caffe2/serialize/inline_container.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/pickle_reader.h"
#include "vision/torch_save/pickle_value.h"
#include "vision/torch_save/storage_view.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/torch_save/torch_error_message.h"
#include "vision/torch_save/zip_directory.h"

namespace dtrain::vision::torch_save {
namespace {

// miniz would also refuse these files, but with "failed finding central
// directory"; saying what the file is instead helps the person holding it.
void check_is_zip(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    fail_checkpoint(path, std::filesystem::exists(path, ec) ? "not a regular file" : "no such file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_checkpoint(path, std::string("cannot open: ") + std::strerror(errno));
  std::array<char, 4> magic{};
  in.read(magic.data(), magic.size());
  if (in.gcount() == 4 && std::memcmp(magic.data(), "PK\x03\x04", 4) == 0) return;
  if (in.gcount() >= 1 && static_cast<unsigned char>(magic[0]) == 0x80) {
    // The legacy format is a bare pickle stream (PROTO first).
    fail_checkpoint(path,
                    "legacy torch.save format (PyTorch < 1.6 or _use_new_zipfile_serialization=False); "
                    "re-save it with torch.save from PyTorch >= 1.6");
  }
  fail_checkpoint(
      path, in.gcount() == 0 ? "empty file, not a zip archive" : "not a zip archive (torch.save >= 1.6 writes one)");
}

// The directory inside the archive that holds data.pkl, relative to the
// archive's own top-level folder (PyTorchStreamReader strips that folder,
// whose name varies: "archive" or the saved file's stem): normally "".
std::string find_pickle_dir(const std::string& path, caffe2::serialize::PyTorchStreamReader& reader) {
  constexpr std::string_view kPickle = "data.pkl";
  std::vector<std::string> records;
  try {
    records = reader.getAllRecords();
  } catch (const std::exception& e) {
    fail_checkpoint(path, "damaged zip archive: " + torch_error_message(e));
  }
  const std::string* best = nullptr;
  for (const std::string& r : records) {
    if (r == kPickle || (r.ends_with(kPickle) && r[r.size() - kPickle.size() - 1] == '/')) {
      if (best == nullptr || r.size() < best->size()) best = &r;
    }
  }
  if (best == nullptr) fail_checkpoint(path, "no data.pkl record: not a torch.save archive");
  return best->substr(0, best->size() - kPickle.size());
}

// Reads a whole record; a damaged zip entry (a bad local header, sizes past
// the end of the file) fails here.
void read_record(const std::string& path, caffe2::serialize::PyTorchStreamReader& reader, const std::string& name,
                 at::DataPtr& data, std::size_t& size) {
  try {
    std::tie(data, size) = reader.getRecord(name);
  } catch (const std::exception& e) {
    fail_checkpoint(path, "cannot read record '" + name + "': " + torch_error_message(e));
  }
}

// The archive's storages, each read once however many tensors view it.
class StorageTable {
 public:
  StorageTable(const std::string& path, caffe2::serialize::PyTorchStreamReader& reader, std::string dir)
      : path_(path), reader_(reader), dir_(std::move(dir)) {}

  const at::Storage& get(const StorageRef& ref) {
    const std::string name = "data/" + ref.key;
    if (const auto it = loaded_.find(ref.key); it != loaded_.end()) {
      if (it->second.ref.dtype != ref.dtype || it->second.ref.numel != ref.numel) {
        fail_checkpoint(path_, "storage record '" + name + "' is described twice, differently (" +
                                   at::toString(it->second.ref.dtype) + "[" + std::to_string(it->second.ref.numel) +
                                   "] and " + at::toString(ref.dtype) + "[" + std::to_string(ref.numel) + "])");
      }
      return it->second.storage;
    }
    if (!reader_.hasRecord(dir_ + name)) fail_checkpoint(path_, "missing storage record '" + name + "'");
    at::DataPtr data;
    std::size_t size = 0;
    read_record(path_, reader_, dir_ + name, data, size);
    std::uint64_t expected = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(ref.numel), c10::elementSize(ref.dtype), &expected) ||
        size < expected) {
      fail_checkpoint(path_, "storage record '" + name + "' holds " + std::to_string(size) + " bytes, " +
                                 std::to_string(ref.numel) + " " + at::toString(ref.dtype) + " elements expected");
    }
    at::Storage storage(at::Storage::use_byte_size_t(), size, std::move(data), /*allocator=*/nullptr,
                        /*resizable=*/false);
    return loaded_.emplace(ref.key, Loaded{ref, std::move(storage)}).first->second.storage;
  }

 private:
  struct Loaded {
    StorageRef ref;
    at::Storage storage;
  };
  const std::string& path_;
  caffe2::serialize::PyTorchStreamReader& reader_;
  std::string dir_;
  std::unordered_map<std::string, Loaded> loaded_;
};

std::string what_is(const PickleValue& v) {
  if (v.kind == PickleKind::kGlobal) return "the global '" + v.text + "'";
  if (v.kind == PickleKind::kObject) return "an object of unknown global '" + v.text + "'";
  return a_pickle_kind(v.kind);
}

// The dict that holds the tensors: the root, or the dict under the root's
// "model" or "state_dict" key (a training script's wrapper).
const PickleContainer& locate_state_dict(const std::string& path, const PickleGraph& graph) {
  if (graph.root.kind != PickleKind::kDict) {
    fail_checkpoint(
        path,
        "the pickled object is " + what_is(graph.root) + ", not a dict of tensors" +
            (graph.root.kind == PickleKind::kObject ? " (a whole module saved instead of its state_dict()?)" : ""));
  }
  const PickleContainer& root = graph.container(graph.root);
  for (const char* wrapper_key : {"model", "state_dict"}) {
    for (const auto& [key, value] : root.entries) {
      if (key.kind == PickleKind::kString && key.text == wrapper_key && value.kind == PickleKind::kDict) {
        return graph.container(value);
      }
    }
  }
  return root;
}

}  // namespace

StateDict load_state_dict(const std::string& path) {
  check_is_zip(path);
  check_archive_sizes(path);  // LibTorch's reader allocates what each record claims
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  try {
    reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const std::exception& e) {
    fail_checkpoint(path, "damaged or truncated zip archive: " + torch_error_message(e));
  }
  const std::string dir = find_pickle_dir(path, *reader);

  at::DataPtr pickle_data;
  std::size_t pickle_size = 0;
  read_record(path, *reader, dir + "data.pkl", pickle_data, pickle_size);
  PickleGraph graph;
  try {
    graph = read_pickle(static_cast<const std::uint8_t*>(pickle_data.get()), pickle_size);
  } catch (const CheckpointError& e) {
    fail_checkpoint(path, std::string("data.pkl: ") + e.what());
  }

  const PickleContainer& dict = locate_state_dict(path, graph);
  StorageTable storages(path, *reader, dir);
  StateDict state;
  state.reserve(dict.entries.size());
  for (const auto& [key, value] : dict.entries) {
    if (key.kind != PickleKind::kString) {
      fail_checkpoint(path, "state dict key #" + std::to_string(state.size()) + " is " + what_is(key) + ", not a str");
    }
    if (value.kind != PickleKind::kTensor)
      fail_checkpoint(path, "value of '" + key.text + "' is " + what_is(value) + ", not a tensor");
    const TensorRef& view = graph.tensors[value.index];
    const StorageRef& ref = graph.storages[view.storage];
    const at::Storage& storage = storages.get(ref);
    try {
      state.push_back({key.text, view_of_storage(storage, ref.dtype, ref.numel, view)});
    } catch (const CheckpointError& e) {
      fail_checkpoint(path, "tensor '" + key.text + "': " + e.what());
    } catch (const std::exception& e) {
      fail_checkpoint(path, "tensor '" + key.text + "': " + torch_error_message(e));
    }
  }
  return state;
}

}  // namespace dtrain::vision::torch_save
