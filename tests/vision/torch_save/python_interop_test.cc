// load_state_dict and save_state_dict against PyTorch itself: files that
// Python's torch.save wrote, and files Python's torch.load must read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "tests/support/command_runner.h"
#include "tests/vision/torch_save/python_torch.h"
#include "tests/vision/torch_save/state_dict_expectations.h"
#include "tests/support/temp_dir.h"
#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/torch_checkpoint.h"

namespace dtrain::vision::torch_save {
namespace {

using testing::quoted;
using testing::run_python;

// Each test gets fresh fixtures from make_state_dict.py.
class PythonInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto made = run_python(MAKE_STATE_DICT_PY, quoted(dir_.path().string()));
    ASSERT_EQ(made.exit_code, 0) << made.output;
    expected_ = nlohmann::json::parse(dtrain::testing::read_file(dir_ / "expected.json"));
  }

  std::string path(const std::string& name) const { return dir_ / name; }

  dtrain::testing::TempDir dir_;
  nlohmann::json expected_;
};

TEST_F(PythonInterop, LoadsModuleStateDictWithEveryDtypeAndLayout) {
  const StateDict state = load_state_dict(path("plain.pt"));
  testing::expect_state_dict(state, expected_, testing::Layout::kAsSaved);
}

TEST_F(PythonInterop, ViewsShareTheirStorageAsTorchLoadMakesThem) {
  const StateDict state = load_state_dict(path("plain.pt"));
  const at::Tensor& base = testing::find(state, "shared.base");
  const at::Tensor& view = testing::find(state, "shared.view");
  EXPECT_TRUE(base.storage().is_alias_of(view.storage()));
  EXPECT_EQ(view.storage_offset(), 7);
  EXPECT_EQ(view.strides(), (std::vector<std::int64_t>{5, 1}));
  EXPECT_TRUE(testing::find(state, "parameter").requires_grad());
}

TEST_F(PythonInterop, LoadsPickleProtocol4) {
  testing::expect_state_dict(load_state_dict(path("protocol4.pt")), expected_, testing::Layout::kAsSaved);
}

TEST_F(PythonInterop, FindsTheStateDictUnderModelOrStateDictKey) {
  // The wrappers also hold an argparse.Namespace, optimizer momentum tensors,
  // a scheduler state, floats, None, lists and tuples, all skipped.
  testing::expect_state_dict(load_state_dict(path("wrapped_model.pt")), expected_, testing::Layout::kAsSaved);
  testing::expect_state_dict(load_state_dict(path("wrapped_state_dict.pt")), expected_, testing::Layout::kAsSaved);
}

TEST_F(PythonInterop, WholePickledModuleIsRejectedNamingItsClass) {
  const std::string file = path("whole_module.pt");
  try {
    load_state_dict(file);
    FAIL() << "loaded a pickled nn.Module";
  } catch (const CheckpointError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(file), std::string::npos) << message;
    EXPECT_NE(message.find("unknown global '__main__.Net'"), std::string::npos) << message;
  }
}

TEST_F(PythonInterop, NonTensorInsideTheStateDictIsAnError) {
  try {
    load_state_dict(path("not_tensor.pt"));
    FAIL() << "loaded an int as a tensor";
  } catch (const CheckpointError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("value of 'count' is an int, not a tensor"), std::string::npos) << message;
  }
}

TEST_F(PythonInterop, TorchLoadReadsWhatSaveStateDictWrites) {
  const std::string saved = path("from_cpp.pt");
  save_state_dict(saved, load_state_dict(path("plain.pt")));
  const auto checked = run_python(CHECK_STATE_DICT_PY, quoted(saved) + " " + quoted(path("expected.json")));
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  // And the C++ reader reads its own file: contiguous copies, same values.
  testing::expect_state_dict(load_state_dict(saved), expected_, testing::Layout::kContiguous);
}

}  // namespace
}  // namespace dtrain::vision::torch_save
