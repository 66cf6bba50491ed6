// model.tar.gz unpacking: what `tar` and `dtrain job run` produce unpacks to
// the same files; archives that would write outside the directory, fill the
// disk or are damaged are refused with a message naming the entry.
#include "serving/model_archive.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/support/command_runner.h"
#include "serving/model_error.h"
#include "tests/serving/tar_builder.h"
#include "tests/support/temp_dir.h"

namespace dtrain::serving {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::read_file;
using dtrain::testing::TempDir;
using dtrain::testing::write_text;
using testing::TarBuilder;

// Unpacks `archive` into a fresh directory and returns ModelError's message, or "" when it succeeded.
std::string unpack_error(const TempDir& scratch, const std::string& archive, const ArchiveLimits& limits = {}) {
  const fs::path out = scratch.path() / "out";
  fs::create_directories(out);
  try {
    unpack_model_archive(archive, out.string(), limits);
    return "";
  } catch (const ModelError& e) {
    return e.what();
  }
}

TEST(ModelArchive, UnpacksWhatTarPacksAsTheJobRunnerDoes) {
  TempDir scratch;
  const fs::path model = scratch.path() / "model";
  write_text(model / "model.json", R"({"kind": "mnist"})");
  write_text(model / "sub/dir/weights.bin", std::string(100000, 'w') + "end");
  // A name longer than the 100 bytes of a tar header (GNU long-name entry).
  const std::string long_name = std::string(150, 'n') + ".txt";
  write_text(model / long_name, "long");
  const std::string archive = scratch / "model.tar.gz";
  ASSERT_EQ(std::system(("tar -czf " + archive + " -C " + model.string() + " .").c_str()), 0);

  ASSERT_EQ(unpack_error(scratch, archive), "");
  const fs::path out = scratch.path() / "out";
  EXPECT_EQ(read_file((out / "model.json").string()), R"({"kind": "mnist"})");
  EXPECT_EQ(read_file((out / "sub/dir/weights.bin").string()), std::string(100000, 'w') + "end");
  EXPECT_EQ(read_file((out / long_name).string()), "long");
}

TEST(ModelArchive, ReadsPaxHeadersAndPlainTar) {
  TempDir scratch;
  const fs::path model = scratch.path() / "model";
  write_text(model / (std::string(120, 'p') + "/model.json"), "pax");
  const std::string archive = scratch / "model.tar";
  ASSERT_EQ(std::system(("tar --format=pax -cf " + archive + " -C " + model.string() + " .").c_str()), 0);
  ASSERT_EQ(unpack_error(scratch, archive), "");
  EXPECT_EQ(read_file((scratch.path() / "out" / (std::string(120, 'p') + "/model.json")).string()), "pax");
}

// Refused archives: the message names the archive, the entry and the reason.
struct RefusedCase {
  std::string label;
  TarBuilder archive;
  std::string expected;
};

TEST(ModelArchive, RefusesEntriesThatWouldLeaveTheDirectory) {
  const std::vector<RefusedCase> cases = {
      {"absolute", TarBuilder().file("/tmp/dtrain-evil", "x"), "absolute path /tmp/dtrain-evil refused"},
      {"dotdot", TarBuilder().file("sub/../../evil", "x"), "path sub/../../evil refused: it contains '..'"},
      {"symlink absolute", TarBuilder().symlink("evil", "/etc"), "symbolic link to '/etc' refused"},
      {"symlink up", TarBuilder().symlink("evil", "../outside"), "symbolic link to '../outside' refused"},
      // A link to the root, then a link that climbs through it.
      {"symlink chain", TarBuilder().symlink("self", ".").symlink("self/up", "../x"),
       "symbolic link to '../x' refused"},
      {"dangling symlink", TarBuilder().symlink("later", "not-yet"), "symbolic link to 'not-yet' refused"},
      {"hard link out", TarBuilder().hard_link("evil", "/etc/passwd"), "absolute path /etc/passwd refused"},
      {"hard link up", TarBuilder().hard_link("evil", "../x"), "refused: it contains '..'"},
      {"hard link missing", TarBuilder().hard_link("evil", "nothing"), "hard link to 'nothing' refused"},
      {"write through link", TarBuilder().file("a", "1").symlink("b", "a").file("b", "overwrite"),
       "refused: it would write through a link"},
      {"device", TarBuilder().entry("dev", '3', "", ""), "entry type '3' refused"},
      {"fifo", TarBuilder().entry("fifo", '6', "", ""), "entry type '6' refused"},
  };
  for (const RefusedCase& c : cases) {
    TempDir scratch;
    const std::string archive = scratch / "model.tar.gz";
    TarBuilder::write_gzip(archive, c.archive.archive());
    const std::string error = unpack_error(scratch, archive);
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.label << ": " << error;
    EXPECT_EQ(error.rfind(archive, 0), 0u) << c.label << ": " << error;
    // Nothing landed outside the destination.
    EXPECT_FALSE(fs::exists(scratch.path() / "outside")) << c.label;
    EXPECT_FALSE(fs::exists(scratch.path() / "evil")) << c.label;
  }
  EXPECT_FALSE(fs::exists("/tmp/dtrain-evil"));
}

TEST(ModelArchive, AcceptsLinksThatStayInside) {
  TempDir scratch;
  const std::string archive = scratch / "model.tar.gz";
  TarBuilder::write_gzip(archive, TarBuilder()
                                      .directory("./")
                                      .file("weights/v1.pt", "weights")
                                      .symlink("model.pt", "weights/v1.pt")
                                      .hard_link("copy.pt", "weights/v1.pt")
                                      .archive());
  ASSERT_EQ(unpack_error(scratch, archive), "");
  const fs::path out = scratch.path() / "out";
  EXPECT_TRUE(fs::is_symlink(out / "model.pt"));
  EXPECT_EQ(read_file((out / "model.pt").string()), "weights");
  EXPECT_EQ(read_file((out / "copy.pt").string()), "weights");
}

TEST(ModelArchive, BoundsTheUnpackedSizeBeforeWriting) {
  TempDir scratch;
  const std::string archive = scratch / "model.tar.gz";
  TarBuilder::write_gzip(archive,
                         TarBuilder().file("a", std::string(600, 'a')).file("b", std::string(600, 'b')).archive());
  ArchiveLimits limits;
  limits.max_total_bytes = 1000;
  EXPECT_NE(unpack_error(scratch, archive, limits).find("unpacks to more than 1000 bytes (at b)"), std::string::npos);
  EXPECT_FALSE(fs::exists(scratch.path() / "out" / "b"));

  // A header claiming 8 GiB in a tiny archive is refused from the header alone.
  TempDir other;
  const std::string huge = other / "huge.tar.gz";
  TarBuilder::write_gzip(huge, TarBuilder().entry("big", '0', "", "", (uint64_t{1} << 33) - 1).unterminated());
  limits.max_total_bytes = uint64_t{1} << 30;
  EXPECT_NE(unpack_error(other, huge, limits).find("unpacks to more than 1073741824 bytes (at big)"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(other.path() / "out" / "big"));

  TempDir many;
  const std::string crowded = many / "many.tar.gz";
  TarBuilder builder;
  for (int i = 0; i < 20; ++i) builder.file("f" + std::to_string(i), "x");
  TarBuilder::write_gzip(crowded, builder.archive());
  limits = {};
  limits.max_entries = 10;
  EXPECT_NE(unpack_error(many, crowded, limits).find("more than 10 entries"), std::string::npos);
}

TEST(ModelArchive, RefusesDamagedArchives) {
  TempDir scratch;
  const std::string whole = TarBuilder().file("model.json", std::string(5000, 'j')).archive();

  const std::string random = scratch / "random.tar.gz";
  std::string noise(4096, '\0');
  uint32_t state = 12345;
  for (char& c : noise) c = static_cast<char>((state = state * 1664525 + 1013904223) >> 24);
  std::ofstream(random, std::ios::binary) << noise;
  EXPECT_NE(unpack_error(scratch, random).find("bad header checksum"), std::string::npos);

  // Cut inside the file's data, and at the end without the end-of-archive marker.
  const std::string cut = scratch / "cut.tar.gz";
  TarBuilder::write_gzip(cut, whole.substr(0, 3000));
  EXPECT_NE(unpack_error(scratch, cut).find("truncated archive"), std::string::npos);
  TarBuilder::write_gzip(cut, TarBuilder().file("model.json", "x").unterminated());
  EXPECT_NE(unpack_error(scratch, cut).find("no end-of-archive marker"), std::string::npos);

  // A gzip stream cut short, and one whose data was altered (CRC mismatch).
  const std::string gz = scratch / "model.tar.gz";
  TarBuilder::write_gzip(gz, whole);
  const std::string bytes = read_file(gz);
  std::ofstream(scratch / "short.tar.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(unpack_error(scratch, scratch / "short.tar.gz").find("truncated"), std::string::npos);
  std::string altered = bytes;
  altered[altered.size() - 6] ^= 0x55;  // inside the CRC32 trailer
  std::ofstream(scratch / "crc.tar.gz", std::ios::binary) << altered;
  EXPECT_NE(unpack_error(scratch, scratch / "crc.tar.gz").find("gzip error"), std::string::npos);

  EXPECT_NE(unpack_error(scratch, scratch / "missing.tar.gz").find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace dtrain::serving
