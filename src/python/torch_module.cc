// dtrain.torch._core: the compiled half of dtrain's Python API. It hands torch.Tensor objects to
// the LibTorch adapter (include/dtrain/torch.h) and returns integer handles for what is in
// flight; python/dtrain/torch/ builds Horovod's API on top (names, ops, compression, autograd,
// the optimizer's hooks). Nothing here negotiates or reduces: the runtime does. Every call that
// can block releases the GIL, so autograd's threads (whose hooks submit gradients) and the
// program's other threads run while a collective waits.
#include <torch/extension.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "dtrain/dtrain.h"
#include "dtrain/elastic.h"
#include "dtrain/torch.h"
#include "python/operation_table.h"
#include "python/process_group.h"

namespace py = pybind11;

namespace dtrain::python {
namespace {

OperationTable& operations() {
  static OperationTable* table = new OperationTable();  // never destroyed: hooks may outlive exit
  return *table;
}

// The exception classes of python/dtrain/common/exceptions.py, which users catch by
// Horovod's names.
struct PythonExceptions {
  py::object internal_error;  // HorovodInternalError: any failed collective
  py::object workers_lost;    // WorkersLostError(HorovodInternalError): a peer is gone
  py::object hosts_updated;   // HostsUpdatedInterrupt: an elastic world is about to change
};

PythonExceptions& exceptions() {
  static PythonExceptions* classes = [] {
    py::module_ module = py::module_::import("dtrain.common.exceptions");
    return new PythonExceptions{module.attr("HorovodInternalError"), module.attr("WorkersLostError"),
                                module.attr("HostsUpdatedInterrupt")};
  }();
  return *classes;
}

void translate_exceptions() {
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const WorkersLostError& e) {
      PyErr_SetString(exceptions().workers_lost.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(exceptions().internal_error.ptr(), e.what());
    } catch (const elastic::HostsUpdated&) {
      PyErr_SetObject(exceptions().hosts_updated.ptr(), Py_False);  // HostsUpdatedInterrupt(skip_sync=False)
    }
  });
}

ReduceOptions reduce_options(int op, double prescale_factor, double postscale_factor) {
  return {static_cast<ReduceOp>(op), prescale_factor, postscale_factor};
}

// Submits what `start` starts and stores it. What the runtime refuses at submission (a bad
// name, root or split, a name already in flight: checks on this rank alone) is the caller's
// mistake, a ValueError as in Horovod; failures found later, between ranks, come from wait().
template <typename Start>
int submit(Start&& start, bool returns_splits = false) {
  try {
    return operations().add(Operation{start(), returns_splits});
  } catch (const WorkersLostError&) {
    throw;
  } catch (const Error& e) {
    throw py::value_error(e.what());
  }
}

bool poll(int handle) {
  const auto operation = operations().find(handle);
  if (!operation) throw py::value_error("dtrain: poll(" + std::to_string(handle) + "): no such operation in flight");
  return std::visit([](const auto& h) { return h.poll(); }, operation->handle);
}

// Waits for `handle` without the GIL, then returns its result: a tensor, a list of tensors
// (grouped allreduce), or (tensor, rows from each rank) for alltoall. The operation leaves
// the table whether it succeeded or failed.
py::object wait(int handle) {
  const auto operation = operations().find(handle);
  if (!operation) {
    throw py::value_error("dtrain: synchronize(" + std::to_string(handle) + "): no such operation in flight");
  }
  struct Remove {
    int handle;
    ~Remove() { operations().remove(handle); }
  } remove{handle};
  if (auto* group = std::get_if<libtorch::TensorGroupHandle>(&operation->handle)) {
    std::vector<at::Tensor> results;
    {
      py::gil_scoped_release release;
      results = group->wait();
    }
    return py::cast(results);
  }
  auto& single = std::get<libtorch::TensorHandle>(operation->handle);
  at::Tensor result;
  {
    py::gil_scoped_release release;
    result = single.wait();
  }
  if (operation->returns_splits) return py::make_tuple(result, single.received_splits());
  return py::cast(result);
}

// ---- elastic ----

// A dtrain::elastic::State whose save, restore and sync are Python methods (TorchState and
// ObjectState in python/dtrain/torch/elastic/).
class PythonState : public elastic::State {
 public:
  void save() override { PYBIND11_OVERRIDE_PURE(void, elastic::State, save); }
  void restore() override { PYBIND11_OVERRIDE_PURE(void, elastic::State, restore); }
  void sync() override { PYBIND11_OVERRIDE_PURE(void, elastic::State, sync); }
};

// elastic::run with a Python function as the training loop. The Python exceptions that stand
// for the runtime's (a lost worker, workers waiting to join) are turned back into the C++ ones
// run() recovers from; any other exception ends the run as it is.
void run_elastic(elastic::State& state, const py::function& train) {
  py::gil_scoped_release release;
  elastic::run(state, [&] {
    py::gil_scoped_acquire acquire;
    try {
      train();
    } catch (py::error_already_set& e) {
      if (e.matches(exceptions().workers_lost)) throw WorkersLostError(e.what());
      if (e.matches(exceptions().hosts_updated)) throw elastic::HostsUpdated();
      throw;
    }
  });
}

}  // namespace
}  // namespace dtrain::python

PYBIND11_MODULE(_core, m) {
  using namespace dtrain;
  using namespace dtrain::python;
  m.doc() = "dtrain's runtime for PyTorch: the compiled part of dtrain.torch";
  translate_exceptions();
  const auto no_gil = py::call_guard<py::gil_scoped_release>();

  // Lifecycle and placement.
  m.def("init", static_cast<void (*)()>(&dtrain::init), no_gil);
  m.def("shutdown", &dtrain::shutdown, no_gil);
  m.def("is_initialized", &dtrain::is_initialized);
  m.def("rank", &dtrain::rank);
  m.def("size", &dtrain::size);
  m.def("local_rank", &dtrain::local_rank);
  m.def("local_size", &dtrain::local_size);
  m.def("cross_rank", &dtrain::cross_rank);
  m.def("cross_size", &dtrain::cross_size);
  m.def("cuda_built", &dtrain::cuda_built);

  // Process sets (include/dtrain/dtrain.h): the runtime's sets, which python/dtrain/torch's
  // ProcessSet objects hold once added. A default-made one is the global set.
  py::class_<ProcessSet>(m, "ProcessSet")
      .def(py::init<>())
      .def("name", &ProcessSet::name)
      .def("ranks", &ProcessSet::ranks)
      .def("rank", &ProcessSet::rank)
      .def("size", &ProcessSet::size)
      .def("included", &ProcessSet::included)
      .def("describe", &ProcessSet::describe);
  m.def("add_process_set", &dtrain::add_process_set, no_gil);
  m.def("remove_process_set", &dtrain::remove_process_set, no_gil);

  // Asynchronous tensor collectives: each returns a handle for poll() and wait(). `op` is
  // dtrain::ReduceOp's value (Sum 0, Average 1, Min 2, Max 3, Product 4).
  m.def("allreduce_async", [](const at::Tensor& tensor, const std::string& name, int op, double prescale,
                              double postscale, const ProcessSet& set) {
    const ReduceOptions options = reduce_options(op, prescale, postscale);
    return submit([&] { return libtorch::allreduce_async(tensor, name, options, set); });
  });
  m.def("allreduce_async_", [](at::Tensor tensor, const std::string& name, int op, double prescale, double postscale,
                               const ProcessSet& set) {
    const ReduceOptions options = reduce_options(op, prescale, postscale);
    return submit([&] { return libtorch::allreduce_async_(tensor, name, options, set); });
  });
  m.def("grouped_allreduce_async", [](const std::vector<at::Tensor>& tensors, const std::vector<std::string>& names,
                                      int op, double prescale, double postscale, bool in_place, const ProcessSet& set) {
    const ReduceOptions options = reduce_options(op, prescale, postscale);
    return submit([&] {
      return in_place ? libtorch::grouped_allreduce_async_(tensors, names, options, set)
                      : libtorch::grouped_allreduce_async(tensors, names, options, set);
    });
  });
  m.def("allgather_async", [](const at::Tensor& tensor, const std::string& name, const ProcessSet& set) {
    return submit([&] { return libtorch::allgather_async(tensor, name, set); });
  });
  m.def("broadcast_async_", [](at::Tensor tensor, int root, const std::string& name, const ProcessSet& set) {
    return submit([&] { return libtorch::broadcast_async_(tensor, root, name, set); });
  });
  m.def("alltoall_async", [](const at::Tensor& tensor, const std::vector<std::int64_t>& splits, const std::string& name,
                             const ProcessSet& set) {
    return submit([&] { return libtorch::alltoall_async(tensor, name, splits, set); }, /*returns_splits=*/true);
  });
  m.def("reducescatter_async", [](const at::Tensor& tensor, const std::string& name, int op, double prescale,
                                  double postscale, const ProcessSet& set) {
    const ReduceOptions options = reduce_options(op, prescale, postscale);
    return submit([&] { return libtorch::reducescatter_async(tensor, name, options, set); });
  });
  m.def("poll", &dtrain::python::poll);
  m.def("wait", &dtrain::python::wait);

  // Collectives as autograd operations (SyncBatchNorm's statistics): the gradient of each is
  // the matching collective of the incoming gradients (include/dtrain/torch.h).
  m.def(
      "allreduce_with_gradient",
      [](const at::Tensor& tensor, const std::string& name, int op) {
        return libtorch::allreduce_with_gradient(tensor, name, static_cast<ReduceOp>(op));
      },
      no_gil);

  // Without tensors.
  m.def("barrier", &dtrain::barrier, py::arg("process_set") = ProcessSet(), no_gil);
  m.def("join", &dtrain::join, no_gil);
  m.def("broadcast_object", [](const py::bytes& bytes, int root, const std::string& name, const ProcessSet& set) {
    std::string data = bytes;
    {
      py::gil_scoped_release release;
      data = dtrain::broadcast_object(data, root, name, set);
    }
    return py::bytes(data);
  });
  m.def("allgather_object", [](const py::bytes& bytes, const std::string& name, const ProcessSet& set) {
    const std::string data = bytes;
    std::vector<std::string> gathered;
    {
      py::gil_scoped_release release;
      gathered = dtrain::allgather_object(data, name, set);
    }
    py::list result;
    for (const std::string& item : gathered) result.append(py::bytes(item));
    return result;
  });
  m.def("start_timeline", &dtrain::start_timeline, py::arg("path"), py::arg("mark_cycles") = false, no_gil);
  m.def("stop_timeline", &dtrain::stop_timeline, no_gil);

  // torch.distributed's backend "dtrain" (python/dtrain/torch/distributed.py registers it).
  m.def(
      "init_external",
      [](int rank, int size, const std::string& host, int port, const std::string& token, double timeout_s) {
        dtrain::init(ExternalWorld{rank, size, host, port, token, "torch", timeout_s});
      },
      no_gil);
  m.def("serve_rendezvous", &dtrain::serve_rendezvous, no_gil);
  // (rank, size, local_rank, local_size) as the launcher, srun or mpirun describes this process.
  m.def("placement_from_environment", [] {
    const Placement p = dtrain::placement_from_environment();
    return py::make_tuple(p.rank, p.size, p.local_rank, p.local_size);
  });
  m.def("create_process_group", [](int rank, int size, const std::string& group_id, const ProcessSet& set) {
    return c10::intrusive_ptr<c10d::Backend>(c10::make_intrusive<DtrainProcessGroup>(rank, size, group_id, set));
  });
  m.def("connect_process_set", &dtrain::connect_process_set, no_gil);

  // Elastic training (include/dtrain/elastic.h).
  m.def("elastic_enabled", &elastic::enabled);
  py::class_<elastic::State, PythonState>(m, "State")
      .def(py::init<>())
      .def("commit", &elastic::State::commit, no_gil)
      .def("check_host_updates", &elastic::State::check_host_updates, no_gil)
      .def("on_reset",
           [](elastic::State& state, py::function callback) {
             state.on_reset([callback](const elastic::WorldChange& change) {
               py::gil_scoped_acquire acquire;
               callback(change.round, change.previous_size, change.size, change.restored, change.reason);
             });
           })
      .def("commits", &elastic::State::commits)
      .def("save", &elastic::State::save)
      .def("restore", &elastic::State::restore)
      .def("sync", &elastic::State::sync);
  m.def("run_elastic", &run_elastic);
  // The adapter's ElasticSampler: the epoch's shared order and the consumed prefix, dealt out
  // to whatever world there is (python/dtrain/torch/elastic/sampler.py wraps it as a Sampler).
  py::class_<libtorch::ElasticSampler>(m, "ElasticSampler")
      .def(py::init<std::size_t, std::uint64_t, bool>(), py::arg("dataset_size"), py::arg("seed"), py::arg("shuffle"))
      .def("set_epoch", &libtorch::ElasticSampler::set_epoch)
      .def("set_position", &libtorch::ElasticSampler::set_position)
      .def("indices", &libtorch::ElasticSampler::indices)
      .def("record_batch", &libtorch::ElasticSampler::record_batch)
      .def("epoch", &libtorch::ElasticSampler::epoch)
      .def("consumed", &libtorch::ElasticSampler::consumed);
}
