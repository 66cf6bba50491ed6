// broadcast_object and allgather_object: bytes travel as uint8 tensors through the ordinary
// collectives, so they are negotiated, checked and timed like any other.
#include "dtrain/dtrain.h"

namespace dtrain {

namespace {
TensorView bytes_view(const char* data, std::int64_t length) {
  TensorView view;
  view.data = const_cast<char*>(data);  // only read: the view is an input
  view.dtype = DataType::kUInt8;
  view.shape = {length};
  return view;
}
}  // namespace

std::string broadcast_object(const std::string& bytes, int root, const std::string& name,
                             const ProcessSet& process_set) {
  // The length first, so every rank can make room; the broadcast of it also checks that the
  // ranks agree on the root.
  std::int64_t length = rank() == root ? static_cast<std::int64_t>(bytes.size()) : 0;
  TensorView length_view;
  length_view.data = &length;
  length_view.dtype = DataType::kInt64;
  length_view.shape = {1};
  broadcast(name + ".length", length_view, root, process_set);
  std::string received = rank() == root ? bytes : std::string(static_cast<std::size_t>(length), '\0');
  broadcast(name + ".bytes", bytes_view(received.data(), length), root, process_set);
  return received;
}

std::vector<std::string> allgather_object(const std::string& bytes, const std::string& name,
                                          const ProcessSet& process_set) {
  const CollectiveResult gathered =
      allgather(name, bytes_view(bytes.data(), static_cast<std::int64_t>(bytes.size())), {}, process_set);
  const char* data = static_cast<const char*>(gathered.output().data);
  std::vector<std::string> everyone;
  for (std::int64_t length : gathered.received_splits()) {
    everyone.push_back(length > 0 ? std::string(data, static_cast<std::size_t>(length)) : std::string());
    data += length;
  }
  return everyone;
}

}  // namespace dtrain
