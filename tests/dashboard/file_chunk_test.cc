// Reading a file another process appends to: whole lines only, resumable, tail first.
#include "dashboard/file_chunk.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace dtrain::dashboard {
namespace {

using dtrain::testing::TempDir;
using dtrain::testing::write_text;

TEST(FileChunk, AHalfWrittenLineWaitsForTheNextRead) {
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  write_text(path, "one\ntwo\nthr");
  FileChunk first = read_complete_lines(path, 0, 1 << 20);
  EXPECT_TRUE(first.exists);
  EXPECT_EQ(first.text, "one\ntwo\n");
  EXPECT_EQ(first.next, 8u);
  EXPECT_EQ(first.size, 11u);
  std::ofstream(path, std::ios::app) << "ee\nfour\n";
  FileChunk second = read_complete_lines(path, first.next, 1 << 20);
  EXPECT_EQ(second.text, "three\nfour\n");
  EXPECT_EQ(read_complete_lines(path, second.next, 1 << 20).text, "");
}

TEST(FileChunk, WithoutAnOffsetTheTailStartsAtALine) {
  TempDir dir;
  const std::string path = dir / "algo-1.log";
  write_text(path, "aaaa\nbbbb\ncccc\n");
  FileChunk tail = read_complete_lines(path, std::nullopt, 7);
  EXPECT_EQ(tail.text, "cccc\n");
  EXPECT_EQ(tail.next, 15u);
  EXPECT_EQ(read_complete_lines(path, std::nullopt, 100).text, "aaaa\nbbbb\ncccc\n");
}

TEST(FileChunk, ChunksAreBoundedAndResume) {
  TempDir dir;
  const std::string path = dir / "log";
  write_text(path, "12\n34\n56\n");
  FileChunk a = read_complete_lines(path, 0, 4);
  EXPECT_EQ(a.text, "12\n");
  FileChunk b = read_complete_lines(path, a.next, 4);
  EXPECT_EQ(b.text, "34\n");
  // A line longer than the bound comes whole.
  write_text(path, "0123456789\nx\n");
  EXPECT_EQ(read_complete_lines(path, 0, 4).text, "0123456789\n");
}

TEST(FileChunk, ARewrittenFileStartsOverAndAMissingOneIsEmpty) {
  TempDir dir;
  const std::string path = dir / "log";
  write_text(path, "new\n");
  EXPECT_EQ(read_complete_lines(path, 1000, 100).text, "new\n");
  FileChunk missing = read_complete_lines(dir / "none", 0, 100);
  EXPECT_FALSE(missing.exists);
  EXPECT_EQ(missing.text, "");
}

}  // namespace
}  // namespace dtrain::dashboard
