// Collectives on at::Tensor: contiguous tensors the runtime can reach (CPU memory, and CUDA
// memory in a build with the GPU engines) are reduced in place through a view of their
// memory; any other tensor is staged through a contiguous CPU copy.
#include "dtrain/torch.h"
#include "torch/cuda_stream.h"

namespace dtrain::libtorch {

DataType dtype_of(at::ScalarType type) {
  switch (type) {
    case at::kByte: return DataType::kUInt8;
    case at::kInt: return DataType::kInt32;
    case at::kLong: return DataType::kInt64;
    case at::kHalf: return DataType::kFloat16;
    case at::kBFloat16: return DataType::kBFloat16;
    case at::kFloat: return DataType::kFloat32;
    case at::kDouble: return DataType::kFloat64;
    default:
      throw Error(std::string("dtrain: tensors of type ") + c10::toString(type) +
                  " are not supported (uint8, int32, int64, float16, bfloat16, float32, float64 are)");
  }
}

at::ScalarType scalar_type_of(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return at::kByte;
    case DataType::kInt32: return at::kInt;
    case DataType::kInt64: return at::kLong;
    case DataType::kFloat16: return at::kHalf;
    case DataType::kBFloat16: return at::kBFloat16;
    case DataType::kFloat32: return at::kFloat;
    case DataType::kFloat64: return at::kDouble;
  }
  return at::kFloat;
}

TensorView view_of(const at::Tensor& tensor) {
  if (!tensor.defined()) throw Error("dtrain: view_of an undefined tensor");
  if (!(tensor.is_cpu() || tensor.is_cuda()) || !tensor.is_contiguous()) {
    throw Error("dtrain: view_of needs a contiguous CPU or CUDA tensor (got " + std::string(tensor.device().str()) +
                (tensor.is_contiguous() ? "" : ", non-contiguous") + ")");
  }
  TensorView view;
  view.data = tensor.data_ptr();
  view.dtype = dtype_of(tensor.scalar_type());
  view.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
  if (tensor.is_cuda()) {
    view.device = {DeviceType::kCUDA, tensor.device().index()};
    view.cuda_stream = current_cuda_stream(tensor.device());
  }
  return view;
}

at::Device reachable_device(const at::Tensor& tensor) {
  const bool reachable = tensor.is_cpu() || (tensor.is_cuda() && dtrain::cuda_built());
  return reachable ? tensor.device() : at::Device(at::kCPU);
}

bool usable_in_place(const at::Tensor& tensor) {
  return tensor.is_contiguous() && reachable_device(tensor) == tensor.device();
}

namespace {

// The tensor the runtime works on: the tensor itself when possible, else a contiguous copy
// on its reachable device.
at::Tensor staged(const at::Tensor& tensor) {
  if (usable_in_place(tensor)) return tensor;
  return tensor.to(reachable_device(tensor)).contiguous();
}

// Outputs the runtime allocates go where the tensor it works on is (a CUDA tensor's result
// stays on its GPU).
OutputAllocator allocate_into(std::shared_ptr<at::Tensor> result, const at::Tensor& work) {
  const at::TensorOptions options = at::TensorOptions().dtype(work.scalar_type()).device(work.device());
  return [result, options](const std::vector<std::int64_t>& shape) {
    *result = at::empty(shape, options);
    return result->data_ptr();
  };
}

}  // namespace

struct TensorHandle::State {
  Handle handle;
  at::Tensor input;                    // kept alive while the runtime reads it
  at::Tensor work;                     // what the runtime reads and writes
  std::shared_ptr<at::Tensor> output;  // for allocated outputs
  at::Tensor copy_back_to;             // in-place ops on staged tensors
  at::Device device = at::kCPU;        // where the result belongs
};

bool TensorHandle::poll() const { return !state_ || state_->handle.poll(); }

void TensorHandle::wait_finished() const {
  if (state_) state_->handle.wait_finished();
}

std::vector<std::int64_t> TensorHandle::received_splits() const {
  if (!state_) throw Error("dtrain: received_splits() on an empty TensorHandle");
  return state_->handle.received_splits();
}

at::Tensor TensorHandle::wait() {
  if (!state_) throw Error("dtrain: wait() on an empty TensorHandle");
  state_->handle.wait();
  at::Tensor result = state_->output && state_->output->defined() ? *state_->output : state_->work;
  if (state_->copy_back_to.defined()) {
    if (!state_->copy_back_to.is_same(state_->work)) state_->copy_back_to.copy_(state_->work);
    return state_->copy_back_to;
  }
  return result.device() == state_->device ? result : result.to(state_->device);
}

TensorHandle allreduce_async(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                             const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->input = staged(tensor);
  h.state_->work = at::empty_like(h.state_->input, at::MemoryFormat::Contiguous);
  h.state_->device = tensor.device();
  h.state_->handle =
      dtrain::allreduce_async(name, view_of(h.state_->input), view_of(h.state_->work), options, process_set);
  return h;
}

TensorHandle allreduce_async_(at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                              const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->work = staged(tensor);
  h.state_->copy_back_to = tensor;
  h.state_->device = tensor.device();
  const TensorView view = view_of(h.state_->work);
  h.state_->handle = dtrain::allreduce_async(name, view, view, options, process_set);
  return h;
}

TensorHandle allgather_async(const at::Tensor& tensor, const std::string& name, const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->work = staged(tensor);
  h.state_->device = tensor.device();
  h.state_->output = std::make_shared<at::Tensor>();
  h.state_->handle = dtrain::allgather_async(name, view_of(h.state_->work),
                                             allocate_into(h.state_->output, h.state_->work), process_set);
  return h;
}

TensorHandle broadcast_async_(at::Tensor& tensor, int root, const std::string& name, const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->work = staged(tensor);
  h.state_->copy_back_to = tensor;
  h.state_->device = tensor.device();
  h.state_->handle = dtrain::broadcast_async(name, view_of(h.state_->work), root, process_set);
  return h;
}

TensorHandle reducescatter_async(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                                 const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->work = staged(tensor);
  h.state_->device = tensor.device();
  h.state_->output = std::make_shared<at::Tensor>();
  h.state_->handle = dtrain::reducescatter_async(name, view_of(h.state_->work), options,
                                                 allocate_into(h.state_->output, h.state_->work), process_set);
  return h;
}

struct TensorGroupHandle::State {
  Handle handle;
  std::vector<at::Tensor> inputs;        // kept alive while the runtime reads them
  std::vector<at::Tensor> works;         // what the runtime reads and writes
  std::vector<at::Tensor> copy_back_to;  // in place: the caller's tensors
  std::vector<at::Device> devices;       // where each result belongs
};

bool TensorGroupHandle::poll() const { return !state_ || state_->handle.poll(); }

void TensorGroupHandle::wait_finished() const {
  if (state_) state_->handle.wait_finished();
}

std::vector<at::Tensor> TensorGroupHandle::wait() {
  if (!state_) throw Error("dtrain: wait() on an empty TensorGroupHandle");
  state_->handle.wait();
  std::vector<at::Tensor> results;
  for (size_t i = 0; i < state_->works.size(); ++i) {
    if (!state_->copy_back_to.empty()) {
      at::Tensor& target = state_->copy_back_to[i];
      if (!target.is_same(state_->works[i])) target.copy_(state_->works[i]);
      results.push_back(target);
    } else {
      const at::Tensor& work = state_->works[i];
      results.push_back(work.device() == state_->devices[i] ? work : work.to(state_->devices[i]));
    }
  }
  return results;
}

TensorGroupHandle TensorGroupHandle::start(const std::vector<at::Tensor>& tensors,
                                           const std::vector<std::string>& names, const ReduceOptions& options,
                                           bool in_place, const ProcessSet& process_set) {
  if (tensors.size() != names.size()) {
    throw Error("dtrain::grouped_allreduce: " + std::to_string(tensors.size()) + " tensors but " +
                std::to_string(names.size()) + " names");
  }
  TensorGroupHandle h;
  h.state_ = std::make_shared<State>();
  State& state = *h.state_;
  std::vector<TensorView> inputs, outputs;
  for (const at::Tensor& tensor : tensors) {
    state.devices.push_back(tensor.device());
    if (in_place) {
      state.works.push_back(staged(tensor));
      state.copy_back_to.push_back(tensor);
      inputs.push_back(view_of(state.works.back()));
      outputs.push_back(inputs.back());
    } else {
      state.inputs.push_back(staged(tensor));
      state.works.push_back(at::empty_like(state.inputs.back(), at::MemoryFormat::Contiguous));
      inputs.push_back(view_of(state.inputs.back()));
      outputs.push_back(view_of(state.works.back()));
    }
  }
  state.handle = dtrain::grouped_allreduce_async(names, inputs, outputs, options, process_set);
  return h;
}

TensorGroupHandle grouped_allreduce_async(const std::vector<at::Tensor>& tensors, const std::vector<std::string>& names,
                                          const ReduceOptions& options, const ProcessSet& process_set) {
  return TensorGroupHandle::start(tensors, names, options, /*in_place=*/false, process_set);
}

TensorGroupHandle grouped_allreduce_async_(const std::vector<at::Tensor>& tensors,
                                           const std::vector<std::string>& names, const ReduceOptions& options,
                                           const ProcessSet& process_set) {
  return TensorGroupHandle::start(tensors, names, options, /*in_place=*/true, process_set);
}

at::Tensor allreduce(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                     const ProcessSet& process_set) {
  return allreduce_async(tensor, name, options, process_set).wait();
}

void allreduce_(at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                const ProcessSet& process_set) {
  allreduce_async_(tensor, name, options, process_set).wait();
}

at::Tensor allgather(const at::Tensor& tensor, const std::string& name, const ProcessSet& process_set) {
  return allgather_async(tensor, name, process_set).wait();
}

at::Tensor broadcast(const at::Tensor& tensor, int root, const std::string& name, const ProcessSet& process_set) {
  at::Tensor copy = tensor.clone();
  broadcast_(copy, root, name, process_set);
  return copy;
}

void broadcast_(at::Tensor& tensor, int root, const std::string& name, const ProcessSet& process_set) {
  broadcast_async_(tensor, root, name, process_set).wait();
}

TensorHandle alltoall_async(const at::Tensor& tensor, const std::string& name, std::vector<std::int64_t> splits,
                            const ProcessSet& process_set) {
  TensorHandle h;
  h.state_ = std::make_shared<TensorHandle::State>();
  h.state_->work = staged(tensor);
  h.state_->device = tensor.device();
  h.state_->output = std::make_shared<at::Tensor>();
  h.state_->handle = dtrain::alltoall_async(name, view_of(h.state_->work), std::move(splits),
                                            allocate_into(h.state_->output, h.state_->work), process_set);
  return h;
}

std::pair<at::Tensor, std::vector<std::int64_t>> alltoall(const at::Tensor& tensor, const std::string& name,
                                                          std::vector<std::int64_t> splits,
                                                          const ProcessSet& process_set) {
  TensorHandle h = alltoall_async(tensor, name, std::move(splits), process_set);
  at::Tensor result = h.wait();
  return {result, h.received_splits()};
}

at::Tensor reducescatter(const at::Tensor& tensor, const std::string& name, const ReduceOptions& options,
                         const ProcessSet& process_set) {
  return reducescatter_async(tensor, name, options, process_set).wait();
}

}  // namespace dtrain::libtorch
