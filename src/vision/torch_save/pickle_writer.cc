#include "vision/torch_save/pickle_writer.h"

#include <limits>

#include "vision/torch_save/pickle_opcodes.h"

namespace dtrain::vision::torch_save {

namespace op = pickle_op;

PickleWriter::PickleWriter() {
  op(op::kProto);
  op(2);
}

void PickleWriter::little_endian(std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void PickleWriter::global(const std::string& module, const std::string& name) {
  const std::string key = module + "\n" + name;
  if (const auto it = memo_.find(key); it != memo_.end()) {
    if (it->second < 256) {
      op(op::kBinGet);
      little_endian(it->second, 1);
    } else {
      op(op::kLongBinGet);
      little_endian(it->second, 4);
    }
    return;
  }
  op(op::kGlobal);
  out_ += key;
  out_ += '\n';
  const auto index = static_cast<std::uint32_t>(memo_.size());
  memo_.emplace(key, index);
  if (index < 256) {
    op(op::kBinPut);
    little_endian(index, 1);
  } else {
    op(op::kLongBinPut);
    little_endian(index, 4);
  }
}

void PickleWriter::string(const std::string& utf8) {
  // BINUNICODE carries a 4-byte length; names and storage keys are far shorter.
  op(op::kBinUnicode);
  little_endian(utf8.size(), 4);
  out_ += utf8;
}

void PickleWriter::integer(std::int64_t value) {
  if (value >= 0 && value < 256) {
    op(op::kBinInt1);
    little_endian(static_cast<std::uint64_t>(value), 1);
  } else if (value >= 0 && value < 65536) {
    op(op::kBinInt2);
    little_endian(static_cast<std::uint64_t>(value), 2);
  } else if (value >= std::numeric_limits<std::int32_t>::min() && value <= std::numeric_limits<std::int32_t>::max()) {
    op(op::kBinInt);
    little_endian(static_cast<std::uint32_t>(static_cast<std::int32_t>(value)), 4);
  } else {
    // LONG1: the fewest two's complement bytes that keep the sign.
    int bytes = 8;
    while (bytes > 1) {
      const std::int64_t shifted = value >> (8 * (bytes - 1) - 1);
      if (shifted != 0 && shifted != -1) break;
      --bytes;
    }
    op(op::kLong1);
    little_endian(static_cast<std::uint64_t>(bytes), 1);
    little_endian(static_cast<std::uint64_t>(value), bytes);
  }
}

void PickleWriter::boolean(bool value) { op(value ? op::kNewTrue : op::kNewFalse); }

void PickleWriter::mark() { op(op::kMark); }

void PickleWriter::tuple_from_mark() { op(op::kTuple); }

void PickleWriter::int_tuple(const std::vector<std::int64_t>& values) {
  if (values.empty()) {
    op(op::kEmptyTuple);
    return;
  }
  if (values.size() > 3) mark();
  for (const std::int64_t v : values) integer(v);
  switch (values.size()) {
    case 1: op(op::kTuple1); break;
    case 2: op(op::kTuple2); break;
    case 3: op(op::kTuple3); break;
    default: op(op::kTuple); break;
  }
}

void PickleWriter::empty_tuple() { op(op::kEmptyTuple); }

void PickleWriter::reduce() { op(op::kReduce); }

void PickleWriter::persistent_id() { op(op::kBinPersId); }

void PickleWriter::set_items() { op(op::kSetItems); }

std::string PickleWriter::finish() {
  op(op::kStop);
  return std::move(out_);
}

}  // namespace dtrain::vision::torch_save
