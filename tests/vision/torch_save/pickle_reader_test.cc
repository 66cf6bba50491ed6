// The unpickler opcode by opcode, on hand-written pickles, and the writer's
// integer encodings read back.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/pickle_reader.h"
#include "vision/torch_save/pickle_writer.h"

namespace dtrain::vision::torch_save {
namespace {

PickleGraph read(const std::string& bytes) {
  return read_pickle(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

std::string error_of(const std::string& bytes) {
  try {
    read(bytes);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "no error";
}

// A pickle from its opcodes, written as a C string with embedded zeros.
template <std::size_t N>
std::string bytes(const char (&s)[N]) {
  return std::string(s, N - 1);
}

TEST(PickleReader, Scalars) {
  // (None, True, False, -2 (BININT), 200 (BININT1), 40000 (BININT2), 0.5 (BINFLOAT))
  const PickleGraph g =
      read(bytes("\x80\x02(N\x88\x89J\xfe\xff\xff\xffK\xc8M\x40\x9cG\x3f\xe0\x00\x00\x00\x00\x00\x00t."));
  ASSERT_EQ(g.root.kind, PickleKind::kTuple);
  const auto& items = g.container(g.root).items;
  ASSERT_EQ(items.size(), 7u);
  EXPECT_EQ(items[0].kind, PickleKind::kNone);
  EXPECT_EQ(items[1].kind, PickleKind::kBool);
  EXPECT_EQ(items[1].integer, 1);
  EXPECT_EQ(items[2].integer, 0);
  EXPECT_EQ(items[3].integer, -2);
  EXPECT_EQ(items[4].integer, 200);
  EXPECT_EQ(items[5].integer, 40000);
  EXPECT_EQ(items[6].kind, PickleKind::kFloat);
  EXPECT_EQ(items[6].real, 0.5);
}

TEST(PickleReader, Long1SignExtends) {
  EXPECT_EQ(read(bytes("\x8a\x01\xff.")).root.integer, -1);
  EXPECT_EQ(read(bytes("\x8a\x00.")).root.integer, 0);
  EXPECT_EQ(read(bytes("\x8a\x05\x00\x00\x00\x00\x01.")).root.integer, std::int64_t{1} << 32);
  EXPECT_EQ(read(bytes("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80.")).root.integer,
            std::numeric_limits<std::int64_t>::min());
  EXPECT_NE(error_of(bytes("\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.")).find("does not fit 64 bits"),
            std::string::npos);
}

TEST(PickleReader, StringsOfEveryWidth) {
  EXPECT_EQ(read(bytes("X\x03\x00\x00\x00"
                       "abc."))
                .root.text,
            "abc");
  EXPECT_EQ(read(bytes("\x8c\x02hi.")).root.text, "hi");
  EXPECT_EQ(read(bytes("\x8d\x01\x00\x00\x00\x00\x00\x00\x00z.")).root.text, "z");
  EXPECT_EQ(read(bytes("C\x01q.")).root.text, "q");
  // A length past the end is damage, however large.
  EXPECT_NE(error_of(bytes("\x8d\xff\xff\xff\xff\xff\xff\xff\xffz.")).find("truncated pickle"), std::string::npos);
}

TEST(PickleReader, ProtocolFourGlobalsAndMemo) {
  // FRAME, STACK_GLOBAL of collections.OrderedDict, MEMOIZE, call, BINGET of
  // the memoized class for a second dict.
  const PickleGraph g =
      read(bytes("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00"
                 "\x8c\x0b"
                 "collections\x94\x8c\x0bOrderedDict\x94\x93\x94)R"
                 "h\x02)R\x86."));
  ASSERT_EQ(g.root.kind, PickleKind::kTuple);
  const auto& items = g.container(g.root).items;
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].kind, PickleKind::kDict);
  EXPECT_EQ(items[1].kind, PickleKind::kDict);
  EXPECT_NE(items[0].index, items[1].index);
}

TEST(PickleReader, MemoKeepsIdentityOfMutatedContainers) {
  // d = {}; memo[0] = d; l = [d]; then d['k'] = 1 through the memo.
  const PickleGraph g =
      read(bytes("}q\x00]q\x01h\x00"
                 "a0h\x00X\x01\x00\x00\x00kK\x01s0h\x01."));
  ASSERT_EQ(g.root.kind, PickleKind::kList);
  const auto& list = g.container(g.root).items;
  ASSERT_EQ(list.size(), 1u);
  const auto& dict = g.container(list[0]).entries;
  ASSERT_EQ(dict.size(), 1u);
  EXPECT_EQ(dict[0].first.text, "k");
  EXPECT_EQ(dict[0].second.integer, 1);
}

TEST(PickleReader, SetItemReplacesAnExistingKeyInPlace) {
  // {'a': 1, 'b': 2, 'a': 3} keeps the order a, b with a = 3.
  const PickleGraph g =
      read(bytes("}(X\x01\x00\x00\x00"
                 "aK\x01X\x01\x00\x00\x00"
                 "bK\x02X\x01\x00\x00\x00"
                 "aK\x03u."));
  const auto& entries = g.container(g.root).entries;
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first.text, "a");
  EXPECT_EQ(entries[0].second.integer, 3);
  EXPECT_EQ(entries[1].first.text, "b");
}

TEST(PickleReader, ListsDupPopAndPopMark) {
  // [1] + APPENDS(2, 3); DUP then POP; a MARK'd junk group dropped by POP_MARK.
  const PickleGraph g =
      read(bytes("]K\x01"
                 "a(K\x02K\x03"
                 "e20(K\x09K\x09"
                 "1."));
  const auto& items = g.container(g.root).items;
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[2].integer, 3);
}

TEST(PickleReader, UnknownGlobalsBecomeOpaqueObjectsThatSwallowState) {
  // argparse.Namespace via NEWOBJ, then BUILD and SETITEMS on it.
  const PickleGraph g = read(bytes("cargparse\nNamespace\n)\x81}X\x01\x00\x00\x00xK\x01sb(K\x01K\x02u."));
  EXPECT_EQ(g.root.kind, PickleKind::kObject);
  EXPECT_EQ(g.root.text, "argparse.Namespace");
}

TEST(PickleReader, TensorsRecordTheirStorageView) {
  const PickleGraph g =
      read(bytes("ctorch._utils\n_rebuild_tensor_v2\n"
                 "((X\x07\x00\x00\x00storagectorch\nHalfStorage\nX\x01\x00\x00\x00"
                 "5X\x06\x00\x00\x00"
                 "cuda:0K\x0ctQ"
                 "K\x02K\x02K\x03\x86K\x04K\x01\x86\x88"
                 "ccollections\nOrderedDict\n)RtR."));
  ASSERT_EQ(g.root.kind, PickleKind::kTensor);
  const TensorRef& t = g.tensors[g.root.index];
  const StorageRef& s = g.storages[t.storage];
  EXPECT_EQ(s.key, "5");
  EXPECT_EQ(s.dtype, at::kHalf);
  EXPECT_EQ(s.numel, 12);
  EXPECT_EQ(s.location, "cuda:0");
  EXPECT_EQ(t.offset, 2);
  EXPECT_EQ(t.sizes, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(t.strides, (std::vector<std::int64_t>{4, 1}));
  EXPECT_TRUE(t.requires_grad);
}

TEST(PickleReader, ParametersAreTheirDataWithTheFlag) {
  const PickleGraph g =
      read(bytes("ctorch._utils\n_rebuild_parameter\n"
                 "(ctorch._utils\n_rebuild_tensor_v2\n"
                 "((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
                 "0X\x03\x00\x00\x00"
                 "cpuK\x02tQ"
                 "K\x00K\x02\x85K\x01\x85\x89}tR\x88}tR."));
  ASSERT_EQ(g.root.kind, PickleKind::kTensor);
  EXPECT_TRUE(g.tensors[g.root.index].requires_grad);
  EXPECT_EQ(g.tensors[g.root.index].sizes, (std::vector<std::int64_t>{2}));
}

TEST(PickleReader, ErrorsNameWhatAndWhere) {
  EXPECT_EQ(error_of(bytes("\x80\x02\xff")), "unsupported pickle opcode 0xff at offset 2");
  EXPECT_EQ(error_of(bytes("\x80\x02")), "pickle ends without STOP at offset 2");
  EXPECT_EQ(error_of(bytes("")), "pickle ends without STOP at offset 0");
  EXPECT_EQ(error_of(bytes("\x80\x09.")), "unsupported pickle protocol 9 in pickle opcode 0x80 at offset 0");
  EXPECT_EQ(error_of(bytes("K\x01h\x07.")), "memo entry 7 was never stored in pickle opcode 0x68 at offset 2");
  EXPECT_EQ(error_of(bytes("R.")), "stack underflow in pickle opcode 0x52 at offset 0");
  EXPECT_EQ(error_of(bytes("K\x01(t.")), "no error");  // the mark's empty tuple
  EXPECT_EQ(error_of(bytes("K\x01(s.")), "stack underflow in pickle opcode 0x73 at offset 3");
  EXPECT_EQ(error_of(bytes("X\x05\x00\x00\x00"
                           "ab")),
            "truncated pickle: 5 bytes wanted, 2 left in pickle opcode 0x58 at offset 0");
  EXPECT_EQ(error_of(bytes("cos\nsys")),
            "truncated pickle: no newline after a GLOBAL name in pickle opcode 0x63 at offset 0");
  EXPECT_EQ(error_of(bytes("K\x01K\x02K\x03s.")), "SETITEM on an int in pickle opcode 0x73 at offset 6");
  EXPECT_NE(error_of(bytes("(X\x07\x00\x00\x00storagectorch\nComplexFloatStorage\nX\x01\x00\x00\x00"
                           "0"
                           "X\x03\x00\x00\x00"
                           "cpuK\x02tQ."))
                .find("unsupported storage type 'torch.ComplexFloatStorage'"),
            std::string::npos);
}

TEST(PickleReader, EveryPrefixOfAValidPickleFailsCleanly) {
  const std::string whole = bytes(
      "\x80\x02"
      "ccollections\nOrderedDict\nq\x00)Rq\x01(X\x01\x00\x00\x00w"
      "ctorch._utils\n_rebuild_tensor_v2\nq\x02"
      "((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
      "0X\x03\x00\x00\x00"
      "cpuK\x06tQ"
      "K\x00K\x02K\x03\x86K\x03K\x01\x86\x89h\x00)Rtq\x03Ru}bq\x04.");
  ASSERT_EQ(read(whole).root.kind, PickleKind::kDict);
  for (std::size_t n = 0; n < whole.size(); ++n) {
    EXPECT_THROW(read(whole.substr(0, n)), CheckpointError) << "prefix of " << n << " bytes";
  }
}

TEST(PickleWriter, IntegersReadBackExactly) {
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::int64_t values[] = {0,
                                 1,
                                 255,
                                 256,
                                 65535,
                                 65536,
                                 -1,
                                 -256,
                                 2147483647,
                                 2147483648,
                                 -2147483648,
                                 -2147483649,
                                 kMin,
                                 kMax,
                                 std::int64_t{1} << 40,
                                 -(std::int64_t{1} << 40),
                                 128,
                                 -129};
  for (const std::int64_t v : values) {
    PickleWriter w;
    w.integer(v);
    const PickleGraph g = read(w.finish());
    EXPECT_EQ(g.root.kind, PickleKind::kInt);
    EXPECT_EQ(g.root.integer, v);
  }
}

TEST(PickleWriter, GlobalsAreMemoizedAndFetched) {
  PickleWriter w;
  for (int i = 0; i < 300; ++i) w.global("m", "g" + std::to_string(i));  // past 256: LONG_BINPUT
  w.mark();
  w.global("m", "g0");
  w.global("m", "g299");  // LONG_BINGET
  w.tuple_from_mark();
  const std::string pickle = w.finish();
  const PickleGraph g = read(pickle);
  const auto& items = g.container(g.root).items;
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].text, "m.g0");
  EXPECT_EQ(items[1].text, "m.g299");
}

}  // namespace
}  // namespace dtrain::vision::torch_save
