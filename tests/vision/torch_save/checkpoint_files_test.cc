// save_state_dict and load_state_dict in C++ alone: the round trip, the
// archive layout, atomic replacement, and damaged files of every kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/vision/torch_save/archive_builder.h"
#include "tests/support/command_runner.h"
#include "tests/support/temp_dir.h"
#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/torch_checkpoint.h"
#include "vision/torch_save/zip_directory.h"

namespace dtrain::vision::torch_save {
namespace {

using dtrain::testing::TempDir;
using testing::Records;

// One tensor of every dtype, and layouts save_state_dict must copy:
// transposed, an offset slice, an expanded (stride 0) view, empty, 0-dim.
StateDict sample_state() {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  return {
      {"conv.weight", at::arange(24, at::kFloat).reshape({2, 3, 4}) / 7},
      {"half", (at::arange(6, at::kFloat) / 4 - 1).to(at::kHalf)},
      {"bfloat16", (at::arange(5, at::kFloat) * 3 - 2).to(at::kBFloat16)},
      {"double", at::arange(4, at::kDouble) / 3},
      {"long", at::tensor(std::vector<std::int64_t>{kMin, -1, 0, kMax}, at::kLong)},
      {"int", at::tensor(std::vector<std::int32_t>{-7, 2147483647}, at::kInt)},
      {"short", at::tensor(std::vector<std::int64_t>{-300, 300}).to(at::kShort)},
      {"char", at::tensor(std::vector<std::int64_t>{-128, 127}).to(at::kChar)},
      {"byte", at::tensor(std::vector<std::int64_t>{0, 255}).to(at::kByte)},
      {"bool", at::tensor(std::vector<std::int64_t>{1, 0, 1}).to(at::kBool)},
      {"scalar", at::scalar_tensor(2.5)},
      {"empty", at::zeros({0, 4})},
      {"transposed", at::arange(12, at::kFloat).reshape({3, 4}).t()},
      {"slice", at::arange(30, at::kFloat).reshape({5, 6}).slice(0, 1, 4).slice(1, 2, 5)},
      {"expanded", at::arange(3, at::kFloat).reshape({3, 1}).expand({3, 4})},
      {"trainable", at::full({2}, 0.5).set_requires_grad(true)},
  };
}

bool same_values(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const at::ScalarType wide = at::isFloatingType(a.scalar_type()) ? at::kDouble : at::kLong;
  return at::equal(a.detach().to(wide), b.detach().to(wide));
}

void expect_same_state(const StateDict& loaded, const StateDict& saved) {
  ASSERT_EQ(loaded.size(), saved.size());
  for (std::size_t i = 0; i < saved.size(); ++i) {
    SCOPED_TRACE(saved[i].name);
    EXPECT_EQ(loaded[i].name, saved[i].name);
    EXPECT_EQ(loaded[i].tensor.scalar_type(), saved[i].tensor.scalar_type());
    EXPECT_TRUE(same_values(loaded[i].tensor, saved[i].tensor));
    EXPECT_TRUE(loaded[i].tensor.is_contiguous());
    EXPECT_EQ(loaded[i].tensor.requires_grad(), saved[i].tensor.requires_grad());
  }
}

// The message of the CheckpointError that loading `path` throws; fails the
// test when it loads or throws anything else.
std::string load_error(const std::string& path) {
  try {
    load_state_dict(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded " << path;
  return {};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::size_t count_files(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

TEST(CheckpointFiles, SaveThenLoadKeepsNamesOrderDtypesAndValues) {
  TempDir dir;
  const StateDict state = sample_state();
  save_state_dict(dir / "s.pt", state);
  expect_same_state(load_state_dict(dir / "s.pt"), state);
}

TEST(CheckpointFiles, EmptyStateDictRoundTrips) {
  TempDir dir;
  save_state_dict(dir / "e.pt", {});
  EXPECT_TRUE(load_state_dict(dir / "e.pt").empty());
}

TEST(CheckpointFiles, ArchiveLayoutIsTorchSaves) {
  TempDir dir;
  save_state_dict(dir / "s.pt", {{"a", at::ones({2})}, {"b", at::zeros({3}, at::kLong)}});
  caffe2::serialize::PyTorchStreamReader reader(dir / "s.pt");
  auto records = reader.getAllRecords();
  std::sort(records.begin(), records.end());
  EXPECT_EQ(records, (std::vector<std::string>{".data/serialization_id", ".format_version", ".storage_alignment",
                                               "byteorder", "data.pkl", "data/0", "data/1", "version"}));
  auto [version, size] = reader.getRecord("version");
  EXPECT_EQ(std::string(static_cast<const char*>(version.get()), size), "3\n");
  // The first local header's file name: the folder every record lives in.
  const std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  ASSERT_GT(bytes.size(), 30u);
  const std::size_t name_length = static_cast<unsigned char>(bytes[26]) | static_cast<unsigned char>(bytes[27]) << 8;
  EXPECT_EQ(bytes.substr(30, name_length), "archive/data.pkl");
}

TEST(CheckpointFiles, SaveReplacesTheFileAndLeavesNoTemporaryFile) {
  TempDir dir;
  save_state_dict(dir / "s.pt", {{"old", at::ones({1})}});
  save_state_dict(dir / "s.pt", {{"new", at::zeros({2})}});
  const StateDict loaded = load_state_dict(dir / "s.pt");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].name, "new");
  EXPECT_EQ(count_files(dir.path()), 1u);
}

TEST(CheckpointFiles, FailedSaveLeavesTheOldFileAlone) {
  TempDir dir;
  save_state_dict(dir / "s.pt", {{"old", at::ones({1})}});
  EXPECT_THROW(save_state_dict(dir / "s.pt", {{"z", at::zeros({2}, at::kComplexFloat)}}), CheckpointError);
  const StateDict loaded = load_state_dict(dir / "s.pt");
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].name, "old");
  EXPECT_EQ(count_files(dir.path()), 1u);
}

TEST(CheckpointFiles, SaveRejectsWhatTorchLoadCouldNotRead) {
  TempDir dir;
  const std::string path = dir / "s.pt";
  const auto message_of = [&](const StateDict& state) {
    try {
      save_state_dict(path, state);
    } catch (const CheckpointError& e) {
      return std::string(e.what());
    }
    return std::string("saved");
  };
  EXPECT_NE(message_of({{"a", at::ones({1})}, {"a", at::ones({1})}}).find("'a' appears twice"), std::string::npos);
  EXPECT_NE(message_of({{"u", at::Tensor()}}).find("'u' is undefined"), std::string::npos);
  EXPECT_NE(message_of({{"c", at::zeros({1}, at::kComplexFloat)}}).find("dtype ComplexFloat"), std::string::npos);
  EXPECT_NE(message_of({{"bad\xff", at::ones({1})}}).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(message_of({{"ok", at::ones({1})}}).find("saved"), std::string::npos);
  EXPECT_NE(message_of({{"sp", at::ones({2, 2}).to_sparse()}}).find("not a dense tensor"), std::string::npos);
}

TEST(CheckpointFiles, SaveIntoAMissingDirectoryNamesTheFile) {
  TempDir dir;
  const std::string path = dir / "missing/s.pt";
  try {
    save_state_dict(path, {{"a", at::ones({1})}});
    FAIL() << "saved into a missing directory";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(CheckpointFiles, MissingEmptyRandomAndLegacyFilesAreNamedErrors) {
  TempDir dir;
  EXPECT_NE(load_error(dir / "nope.pt").find("'" + (dir / "nope.pt") + "': no such file"), std::string::npos);
  write_bytes(dir / "empty.pt", "");
  EXPECT_NE(load_error(dir / "empty.pt").find("empty file"), std::string::npos);
  std::mt19937 random(7);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  noise[0] = 'x';
  write_bytes(dir / "noise.pt", noise);
  const std::string noise_error = load_error(dir / "noise.pt");
  EXPECT_NE(noise_error.find(dir / "noise.pt"), std::string::npos) << noise_error;
  EXPECT_NE(noise_error.find("not a zip archive"), std::string::npos) << noise_error;
  write_bytes(dir / "legacy.pt", std::string("\x80\x02\x8a\x0a", 4) + noise);
  EXPECT_NE(load_error(dir / "legacy.pt").find("legacy torch.save format"), std::string::npos);
}

TEST(CheckpointFiles, EveryTruncationIsANamedError) {
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  const std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  for (std::size_t n = 0; n < bytes.size(); n += 7) {
    write_bytes(dir / "t.pt", bytes.substr(0, n));
    const std::string message = load_error(dir / "t.pt");
    ASSERT_NE(message.find(dir / "t.pt"), std::string::npos) << "truncated to " << n << ": " << message;
  }
}

// The directory entry of the record whose name ends with `name` in a zip archive's bytes.
std::size_t directory_entry(const std::string& archive, const std::string& name) {
  for (std::size_t at = archive.find("PK\x01\x02"); at != std::string::npos; at = archive.find("PK\x01\x02", at + 1)) {
    const std::size_t name_bytes =
        static_cast<unsigned char>(archive[at + 28]) | static_cast<unsigned char>(archive[at + 29]) << 8;
    if (archive.compare(at + 46, name_bytes, "archive/" + name) == 0) return at;
  }
  ADD_FAILURE() << "no directory entry for " << name;
  return 0;
}

TEST(CheckpointFiles, TheZipDirectoryOfWhatTorchSaveWritesIsReadBack) {
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  const std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  const std::vector<ZipRecord> records =
      read_zip_directory(bytes.size(), [&](std::uint64_t offset, std::size_t n) { return bytes.substr(offset, n); });
  const Records written = testing::read_archive(dir / "s.pt");
  ASSERT_EQ(records.size(), written.size() + 1);  // and "version"
  for (const auto& [name, contents] : written) {
    const auto record =
        std::find_if(records.begin(), records.end(), [&](const ZipRecord& r) { return r.name == "archive/" + name; });
    ASSERT_NE(record, records.end()) << name;
    EXPECT_EQ(record->method, 0);
    EXPECT_EQ(record->uncompressed_bytes, contents.size()) << name;
    EXPECT_EQ(bytes.compare(record->local_header_offset, 4, "PK\x03\x04"), 0) << name;
  }
  EXPECT_NO_THROW(check_record_sizes(records, bytes.size()));
}

TEST(CheckpointFiles, ARecordClaimingMoreThanTheFileHoldsIsNamedBeforeAnythingIsAllocated) {
  // LibTorch's reader would allocate a record's claimed size (here 2.8 GB of a file of a few
  // kilobytes) before finding the bytes missing; the directory is checked first.
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  const std::size_t entry = directory_entry(bytes, "data.pkl");
  bytes.replace(entry + 24, 4, std::string("\x02\x00\x00\xa8", 4));  // uncompressed size 0xa8000002
  write_bytes(dir / "big.pt", bytes);
  const std::string message = load_error(dir / "big.pt");
  EXPECT_NE(message.find("'" + (dir / "big.pt") +
                         "': damaged zip archive: record 'archive/data.pkl' claims 2818572290 bytes from "),
            std::string::npos)
      << message;
}

TEST(CheckpointFiles, RecordsThatShareTheirBytesAreRefused) {
  // Thousands of entries pointing at one record's bytes would each be read and kept whole.
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  const std::size_t first = directory_entry(bytes, "data/0");
  const std::size_t second = directory_entry(bytes, "data/1");
  bytes.replace(second + 42, 4, bytes.substr(first + 42, 4));  // data/1's local header offset := data/0's
  write_bytes(dir / "shared.pt", bytes);
  const std::string message = load_error(dir / "shared.pt");
  EXPECT_NE(message.find("more than lie between it and the next record"), std::string::npos) << message;
}

// LibTorch's zip reader does not check CRC-32s (torch.load does not either),
// so damage inside data.pkl shows as a broken pickle: here GLOBAL, the first
// opcode after PROTO, becomes 0xff in the file itself.
TEST(CheckpointFiles, CorruptedPickleRecordIsANamedError) {
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  std::size_t offset = 0;
  {
    caffe2::serialize::PyTorchStreamReader reader(dir / "s.pt");
    offset = reader.getRecordOffset("data.pkl");
  }
  std::string bytes = dtrain::testing::read_file(dir / "s.pt");
  ASSERT_EQ(bytes[offset + 2], 'c');
  bytes[offset + 2] = '\xff';
  write_bytes(dir / "s.pt", bytes);
  const std::string message = load_error(dir / "s.pt");
  EXPECT_NE(message.find("checkpoint '" + (dir / "s.pt") + "': data.pkl: unsupported pickle opcode 0xff at offset 2"),
            std::string::npos)
      << message;
}

TEST(CheckpointFiles, GarbagePickleNamesTheOpcodeAndOffset) {
  TempDir dir;
  testing::write_archive(dir / "g.pt", {{"data.pkl", std::string("\x80\x02\xff\x00", 4)}});
  const std::string message = load_error(dir / "g.pt");
  EXPECT_NE(message.find(dir / "g.pt"), std::string::npos) << message;
  EXPECT_NE(message.find("data.pkl: unsupported pickle opcode 0xff at offset 2"), std::string::npos) << message;
}

TEST(CheckpointFiles, ArchiveWithoutPickleIsNotACheckpoint) {
  TempDir dir;
  testing::write_archive(dir / "n.pt", {{"other.bin", "abc"}});
  EXPECT_NE(load_error(dir / "n.pt").find("no data.pkl record"), std::string::npos);
}

TEST(CheckpointFiles, StorageProblemsAreNamed) {
  TempDir dir;
  const std::string floats16(16, '\0');  // four float32 zeros
  const auto error_of = [&](const Records& records) {
    testing::write_archive(dir / "c.pt", records);
    return load_error(dir / "c.pt");
  };
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(4, 0, {4}, {1}, "FloatStorage", "17")}})
                .find("missing storage record 'data/17'"),
            std::string::npos);
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(100, 0, {4}, {1})}, {"data/0", floats16}})
                .find("storage record 'data/0' holds 16 bytes, 100 Float elements expected"),
            std::string::npos);
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(4, 0, {3}, {2})}, {"data/0", floats16}})
                .find("tensor 'x': out-of-bounds view"),
            std::string::npos);
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(4, 1, {2, 2}, {2, 1})}, {"data/0", floats16}})
                .find("out-of-bounds view (offset 1, size [2, 2], stride [2, 1]) of a storage of 4 elements"),
            std::string::npos);
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(4, 0, {2}, {-1})}, {"data/0", floats16}})
                .find("negative size or stride"),
            std::string::npos);
  EXPECT_NE(error_of({{"data.pkl", testing::one_tensor_pickle(4, 0, {std::int64_t{1} << 62, 4}, {4, 1})},
                      {"data/0", floats16}})
                .find("overflowing view"),
            std::string::npos);
  EXPECT_NE(
      error_of({{"data.pkl", testing::one_tensor_pickle(2, 0, {2}, {1}, "ComplexFloatStorage")}, {"data/0", floats16}})
          .find("unsupported storage type 'torch.ComplexFloatStorage'"),
      std::string::npos);
  // A view that fits, over a storage it shares with nobody, loads.
  testing::write_archive(dir / "ok.pt",
                         {{"data.pkl", testing::one_tensor_pickle(4, 1, {3}, {1})}, {"data/0", floats16}});
  const StateDict ok = load_state_dict(dir / "ok.pt");
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].tensor.sizes(), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(ok[0].tensor.storage_offset(), 1);
}

// Damaged pickles inside intact archives: every prefix of a real data.pkl
// and a few thousand random byte changes must each load or throw
// CheckpointError; nothing may crash or throw anything else.
TEST(CheckpointFiles, DamagedPicklesNeverCrash) {
  TempDir dir;
  save_state_dict(dir / "s.pt", sample_state());
  Records records = testing::read_archive(dir / "s.pt");
  ASSERT_EQ(records.front().first, "data.pkl");
  const std::string pickle = records.front().second;
  const std::string path = dir / "d.pt";
  const auto try_load = [&](const std::string& damaged) {
    records.front().second = damaged;
    testing::write_archive(path, records);
    try {
      load_state_dict(path);
    } catch (const CheckpointError& e) {
      if (std::string(e.what()).find(path) == std::string::npos) ADD_FAILURE() << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a CheckpointError: " << e.what();
    }
  };
  for (std::size_t n = 0; n < pickle.size(); ++n) try_load(pickle.substr(0, n));
  std::mt19937 random(2024);
  for (int round = 0; round < 2000; ++round) {
    std::string damaged = pickle;
    const int changes = 1 + static_cast<int>(random() % 3);
    for (int k = 0; k < changes; ++k) damaged[random() % damaged.size()] = static_cast<char>(random());
    try_load(damaged);
  }
}

}  // namespace
}  // namespace dtrain::vision::torch_save
