// What the unpickler builds from data.pkl: a small object graph of the values
// torch.save's pickles contain. Containers live in one arena (PickleGraph) and
// values refer to them by index, so that shared and mutated containers keep
// Python's identity semantics (a dict fetched from the memo and then filled is
// the same dict), and so that a damaged file that builds a cycle or a very
// deep nesting cannot leak memory or overflow the stack when destroyed.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtrain::vision::torch_save {

enum class PickleKind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,  // text or bytes
  kGlobal,  // a class or function named by GLOBAL, not yet called
  kObject,  // the result of calling a global this reader does not model
  kTuple,
  kList,
  kDict,     // dict and collections.OrderedDict
  kStorage,  // a persistent-id storage: PickleGraph::storages[index]
  kTensor,   // a rebuilt tensor, not yet read: PickleGraph::tensors[index]
};

const char* pickle_kind_name(PickleKind kind);

// The kind with its article, for messages: "an int", "a dict", "None".
std::string a_pickle_kind(PickleKind kind);

struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  std::int64_t integer = 0;  // kBool, kInt
  double real = 0;           // kFloat
  std::string text;          // kString; kGlobal and kObject: "module.name" of the class
  std::size_t index = 0;     // kTuple, kList, kDict, kStorage, kTensor: where in PickleGraph
};

// A storage named by a persistent id ('storage', torch.XStorage, key,
// location, numel): its bytes are the archive record data/<key>.
struct StorageRef {
  std::string key;
  at::ScalarType dtype = at::kFloat;
  std::int64_t numel = 0;
  std::string location;  // "cpu", "cuda:0": where it was saved from
};

// torch._utils._rebuild_tensor_v2's arguments: a strided view of a storage.
struct TensorRef {
  std::size_t storage = 0;  // index into PickleGraph::storages
  std::int64_t offset = 0;  // in elements
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  bool requires_grad = false;
};

struct PickleContainer {
  std::vector<PickleValue> items;                            // kTuple, kList
  std::vector<std::pair<PickleValue, PickleValue>> entries;  // kDict, in insertion order
  // kDict: the position in `entries` of each string or integer key, so that a
  // repeated SETITEM replaces the value as Python's dict does.
  std::unordered_map<std::string, std::size_t> position_of_key;
};

struct PickleGraph {
  std::vector<PickleContainer> containers;
  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;
  PickleValue root;

  const PickleContainer& container(const PickleValue& v) const { return containers.at(v.index); }
};

}  // namespace dtrain::vision::torch_save
