// The pickle opcodes that torch.save's data.pkl uses (protocol 2, plus the
// protocol 4 forms a newer pickler may choose), shared by the reader and the
// writer. Values are Python's (Lib/pickle.py); the names are its names.
#pragma once

#include <cstdint>

namespace dtrain::vision::torch_save::pickle_op {

// Framing and the end.
inline constexpr std::uint8_t kProto = 0x80;  // + 1 byte protocol
inline constexpr std::uint8_t kFrame = 0x95;  // + 8 byte frame length (a hint only)
inline constexpr std::uint8_t kStop = '.';

// The stack and the mark stack.
inline constexpr std::uint8_t kMark = '(';
inline constexpr std::uint8_t kPop = '0';
inline constexpr std::uint8_t kPopMark = '1';
inline constexpr std::uint8_t kDup = '2';

// The memo.
inline constexpr std::uint8_t kBinPut = 'q';      // + 1 byte index
inline constexpr std::uint8_t kLongBinPut = 'r';  // + 4 byte index
inline constexpr std::uint8_t kMemoize = 0x94;    // index = memo size
inline constexpr std::uint8_t kBinGet = 'h';
inline constexpr std::uint8_t kLongBinGet = 'j';

// Scalars.
inline constexpr std::uint8_t kNone = 'N';
inline constexpr std::uint8_t kNewTrue = 0x88;
inline constexpr std::uint8_t kNewFalse = 0x89;
inline constexpr std::uint8_t kBinInt = 'J';    // 4 byte signed
inline constexpr std::uint8_t kBinInt1 = 'K';   // 1 byte unsigned
inline constexpr std::uint8_t kBinInt2 = 'M';   // 2 byte unsigned
inline constexpr std::uint8_t kLong1 = 0x8a;    // 1 byte length, two's complement bytes
inline constexpr std::uint8_t kBinFloat = 'G';  // 8 byte big-endian double

// Strings (text and, read as the same thing, bytes).
inline constexpr std::uint8_t kBinUnicode = 'X';        // 4 byte length
inline constexpr std::uint8_t kShortBinUnicode = 0x8c;  // 1 byte length
inline constexpr std::uint8_t kBinUnicode8 = 0x8d;      // 8 byte length
inline constexpr std::uint8_t kBinString = 'T';         // Python 2 str, 4 byte length
inline constexpr std::uint8_t kShortBinString = 'U';
inline constexpr std::uint8_t kBinBytes = 'B';
inline constexpr std::uint8_t kShortBinBytes = 'C';

// Containers.
inline constexpr std::uint8_t kEmptyTuple = ')';
inline constexpr std::uint8_t kTuple = 't';  // items since the mark
inline constexpr std::uint8_t kTuple1 = 0x85;
inline constexpr std::uint8_t kTuple2 = 0x86;
inline constexpr std::uint8_t kTuple3 = 0x87;
inline constexpr std::uint8_t kEmptyList = ']';
inline constexpr std::uint8_t kAppend = 'a';
inline constexpr std::uint8_t kAppends = 'e';
inline constexpr std::uint8_t kEmptyDict = '}';
inline constexpr std::uint8_t kSetItem = 's';
inline constexpr std::uint8_t kSetItems = 'u';

// Objects.
inline constexpr std::uint8_t kGlobal = 'c';        // "module\nname\n"
inline constexpr std::uint8_t kStackGlobal = 0x93;  // module and name from the stack
inline constexpr std::uint8_t kReduce = 'R';        // callable(*args)
inline constexpr std::uint8_t kNewObj = 0x81;       // cls.__new__(cls, *args)
inline constexpr std::uint8_t kBuild = 'b';         // obj.__setstate__(state)
inline constexpr std::uint8_t kBinPersId = 'Q';     // persistent_load(pid)

}  // namespace dtrain::vision::torch_save::pickle_op
