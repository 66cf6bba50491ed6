// Building torch.save-like archives by hand, for tests that need a file
// PyTorch would never write: a chosen data.pkl, missing or short records.
#pragma once

#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vision/torch_save/pickle_writer.h"

namespace dtrain::vision::torch_save::testing {

using Records = std::vector<std::pair<std::string, std::string>>;

// A zip archive of `records` (names relative to the archive folder, as
// torch.save writes them), plus the "version" record.
inline void write_archive(const std::string& path, const Records& records) {
  caffe2::serialize::PyTorchStreamWriter writer(path);
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
}

// Every record of an archive, "version" aside, in archive order.
inline Records read_archive(const std::string& path) {
  caffe2::serialize::PyTorchStreamReader reader(path);
  Records records;
  for (const std::string& name : reader.getAllRecords()) {
    if (name == "version" || name == ".data/version") continue;
    auto [data, size] = reader.getRecord(name);
    records.emplace_back(name, std::string(static_cast<const char*>(data.get()), size));
  }
  return records;
}

// The data.pkl of an OrderedDict holding one tensor "x": the view (offset,
// sizes, strides) of storage `key` of `numel` elements of torch.<storage_class>.
inline std::string one_tensor_pickle(std::int64_t numel, std::int64_t offset, const std::vector<std::int64_t>& sizes,
                                     const std::vector<std::int64_t>& strides,
                                     const std::string& storage_class = "FloatStorage", const std::string& key = "0") {
  PickleWriter w;
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.mark();
  w.string("x");
  w.global("torch._utils", "_rebuild_tensor_v2");
  w.mark();
  w.mark();
  w.string("storage");
  w.global("torch", storage_class);
  w.string(key);
  w.string("cpu");
  w.integer(numel);
  w.tuple_from_mark();
  w.persistent_id();
  w.integer(offset);
  w.int_tuple(sizes);
  w.int_tuple(strides);
  w.boolean(false);
  w.global("collections", "OrderedDict");
  w.empty_tuple();
  w.reduce();
  w.tuple_from_mark();
  w.reduce();
  w.set_items();
  return w.finish();
}

}  // namespace dtrain::vision::torch_save::testing
