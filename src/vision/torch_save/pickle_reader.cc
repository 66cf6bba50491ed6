#include "vision/torch_save/pickle_reader.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vision/torch_save/checkpoint_error.h"
#include "vision/torch_save/pickle_opcodes.h"
#include "vision/torch_save/torch_storage_types.h"

namespace dtrain::vision::torch_save {
namespace {

static_assert(std::endian::native == std::endian::little,
              "storage records and pickle integers are little-endian; a big-endian host would need swaps");

// The globals whose calls the reader models; every other call is opaque.
constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kRebuildTensorV2 = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr std::string_view kRebuildParameterWithState = "torch._utils._rebuild_parameter_with_state";

// The highest pickle protocol Python writes today; PROTO above it is damage.
constexpr unsigned kHighestProtocol = 5;

class Unpickler {
 public:
  Unpickler(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  PickleGraph run() {
    while (true) {
      if (pos_ >= size_) fail_at(pos_, "pickle ends without STOP");
      op_offset_ = pos_;
      op_ = data_[pos_++];
      if (op_ == pickle_op::kStop) {
        graph_.root = pop();
        return std::move(graph_);
      }
      step();
    }
  }

 private:
  [[noreturn]] void fail_at(std::size_t offset, const std::string& what) const {
    throw CheckpointError(what + " at offset " + std::to_string(offset));
  }

  // An error in the current opcode: "<what> in opcode 0x52 at offset 165".
  [[noreturn]] void fail(const std::string& what) const {
    char op[8];
    std::snprintf(op, sizeof op, "0x%02x", op_);
    fail_at(op_offset_, what + " in pickle opcode " + op);
  }

  // ---- reading the input ----

  const std::uint8_t* take(std::uint64_t n) {
    if (n > size_ - pos_) {
      fail("truncated pickle: " + std::to_string(n) + " bytes wanted, " + std::to_string(size_ - pos_) + " left");
    }
    const std::uint8_t* p = data_ + pos_;
    pos_ += static_cast<std::size_t>(n);
    return p;
  }

  std::uint64_t read_unsigned(std::size_t bytes) {
    const std::uint8_t* p = take(bytes);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v |= std::uint64_t{p[i]} << (8 * i);
    return v;
  }

  std::string read_string(std::uint64_t length) {
    const std::uint8_t* p = take(length);
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(length));
  }

  // GLOBAL's operands: text up to a newline.
  std::string read_line() {
    const void* end = std::memchr(data_ + pos_, '\n', size_ - pos_);
    if (end == nullptr) fail("truncated pickle: no newline after a GLOBAL name");
    const std::size_t length = static_cast<const std::uint8_t*>(end) - (data_ + pos_);
    std::string s = read_string(length);
    ++pos_;  // the newline
    return s;
  }

  // Two's complement, little-endian, any width up to 64 bits (LONG1).
  std::int64_t read_long(std::size_t bytes) {
    if (bytes > 8) fail("integer of " + std::to_string(bytes) + " bytes does not fit 64 bits");
    if (bytes == 0) return 0;
    std::uint64_t v = read_unsigned(bytes);
    if (bytes < 8 && (v >> (8 * bytes - 1)) & 1) v |= ~std::uint64_t{0} << (8 * bytes);
    return static_cast<std::int64_t>(v);
  }

  // ---- the stacks ----

  // Items below the innermost mark belong to an enclosing construct; reaching
  // them is a damaged pickle (Python's unpickler swaps stacks at MARK and
  // fails the same way).
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }

  PickleValue pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    PickleValue v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }

  PickleValue& top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }

  std::vector<PickleValue> pop_to_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PickleValue> items(std::make_move_iterator(stack_.begin() + mark),
                                   std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return items;
  }

  void push(PickleValue v) { stack_.push_back(std::move(v)); }

  // ---- values ----

  static PickleValue scalar(PickleKind kind, std::int64_t integer = 0) {
    PickleValue v;
    v.kind = kind;
    v.integer = integer;
    return v;
  }

  static PickleValue text(PickleKind kind, std::string s) {
    PickleValue v;
    v.kind = kind;
    v.text = std::move(s);
    return v;
  }

  PickleValue container(PickleKind kind, std::vector<PickleValue> items = {}) {
    PickleValue v;
    v.kind = kind;
    v.index = graph_.containers.size();
    graph_.containers.emplace_back().items = std::move(items);
    return v;
  }

  PickleContainer& contents(const PickleValue& v) { return graph_.containers[v.index]; }

  // Keys that compare equal in Python (1 and True) get the same slot.
  static std::string slot_of_key(const PickleValue& key) {
    switch (key.kind) {
      case PickleKind::kString: return "s" + key.text;
      case PickleKind::kInt:
      case PickleKind::kBool: return "i" + std::to_string(key.integer);
      default: return {};
    }
  }

  void set_item(PickleValue& target, PickleValue key, PickleValue value) {
    if (target.kind == PickleKind::kObject) return;  // opaque: its items are not modelled
    if (target.kind != PickleKind::kDict) fail(std::string("SETITEM on ") + a_pickle_kind(target.kind));
    PickleContainer& dict = contents(target);
    const std::string slot = slot_of_key(key);
    if (!slot.empty()) {
      const auto [it, inserted] = dict.position_of_key.try_emplace(slot, dict.entries.size());
      if (!inserted) {
        dict.entries[it->second].second = std::move(value);
        return;
      }
    }
    dict.entries.emplace_back(std::move(key), std::move(value));
  }

  void append(PickleValue& target, std::vector<PickleValue> values) {
    if (target.kind == PickleKind::kObject) return;
    if (target.kind != PickleKind::kList) fail(std::string("APPEND on ") + a_pickle_kind(target.kind));
    auto& items = contents(target).items;
    for (PickleValue& v : values) items.push_back(std::move(v));
  }

  // ---- calls: REDUCE and NEWOBJ ----

  PickleValue call(const PickleValue& callable, const PickleValue& args) {
    if (callable.kind != PickleKind::kGlobal) fail(std::string("call of ") + a_pickle_kind(callable.kind));
    if (args.kind != PickleKind::kTuple) fail(std::string("call arguments are ") + a_pickle_kind(args.kind));
    const std::vector<PickleValue>& a = contents(args).items;
    if (callable.text == kOrderedDict) {
      if (!a.empty()) fail("collections.OrderedDict called with arguments");
      return container(PickleKind::kDict);
    }
    if (callable.text == kRebuildTensorV2) return rebuild_tensor(a);
    if (callable.text == kRebuildParameter || callable.text == kRebuildParameterWithState) {
      return rebuild_parameter(callable.text, a);
    }
    return text(PickleKind::kObject, callable.text);
  }

  bool is_int(const PickleValue& v) const { return v.kind == PickleKind::kInt || v.kind == PickleKind::kBool; }

  std::vector<std::int64_t> int_tuple(const PickleValue& v, const char* what) {
    if (v.kind != PickleKind::kTuple) {
      fail(std::string("_rebuild_tensor_v2: ") + what + " is " + a_pickle_kind(v.kind) + ", not a tuple");
    }
    std::vector<std::int64_t> out;
    for (const PickleValue& item : contents(v).items) {
      if (!is_int(item)) fail(std::string("_rebuild_tensor_v2: ") + what + " holds " + a_pickle_kind(item.kind));
      out.push_back(item.integer);
    }
    return out;
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  // backward_hooks[, metadata]): the view is recorded, checked against the
  // storage only when the caller reads it.
  PickleValue rebuild_tensor(const std::vector<PickleValue>& a) {
    if (a.size() != 6 && a.size() != 7) {
      fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(a.size()));
    }
    if (a[0].kind != PickleKind::kStorage) {
      fail(std::string("_rebuild_tensor_v2: storage is ") + a_pickle_kind(a[0].kind));
    }
    if (!is_int(a[1])) fail(std::string("_rebuild_tensor_v2: offset is ") + a_pickle_kind(a[1].kind));
    if (!is_int(a[4])) fail(std::string("_rebuild_tensor_v2: requires_grad is ") + a_pickle_kind(a[4].kind));
    TensorRef t;
    t.storage = a[0].index;
    t.offset = a[1].integer;
    t.sizes = int_tuple(a[2], "size");
    t.strides = int_tuple(a[3], "stride");
    if (t.sizes.size() != t.strides.size()) {
      fail("_rebuild_tensor_v2: " + std::to_string(t.sizes.size()) + " sizes but " + std::to_string(t.strides.size()) +
           " strides");
    }
    t.requires_grad = a[4].integer != 0;
    // a[5] (backward hooks) and a[6] (Python-side metadata) mean nothing to LibTorch.
    return tensor(std::move(t));
  }

  // _rebuild_parameter(data, requires_grad, backward_hooks[, state]): an
  // nn.Parameter is its data with the flag.
  PickleValue rebuild_parameter(const std::string& name, const std::vector<PickleValue>& a) {
    const std::size_t expected = name == kRebuildParameter ? 3 : 4;
    if (a.size() != expected) {
      fail(name + " takes " + std::to_string(expected) + " arguments, got " + std::to_string(a.size()));
    }
    if (a[0].kind != PickleKind::kTensor) fail(name + ": data is " + a_pickle_kind(a[0].kind));
    if (!is_int(a[1])) fail(name + ": requires_grad is " + a_pickle_kind(a[1].kind));
    TensorRef t = graph_.tensors[a[0].index];
    t.requires_grad = a[1].integer != 0;
    return tensor(std::move(t));
  }

  PickleValue tensor(TensorRef t) {
    PickleValue v;
    v.kind = PickleKind::kTensor;
    v.index = graph_.tensors.size();
    graph_.tensors.push_back(std::move(t));
    return v;
  }

  // ---- persistent ids ----

  // ('storage', torch.XStorage, key, location, numel), as torch.save's
  // persistent_id writes it.
  PickleValue persistent_load(const PickleValue& pid) {
    if (pid.kind != PickleKind::kTuple) fail(std::string("persistent id is ") + a_pickle_kind(pid.kind));
    const std::vector<PickleValue>& a = contents(pid).items;
    if (a.size() != 5 || a[0].kind != PickleKind::kString || a[0].text != "storage") {
      fail("persistent id is not ('storage', type, key, location, numel)");
    }
    if (a[1].kind != PickleKind::kGlobal) fail(std::string("storage type is ") + a_pickle_kind(a[1].kind));
    const auto dtype = dtype_of_storage_class(a[1].text);
    if (!dtype) fail("unsupported storage type '" + a[1].text + "'");
    if (a[2].kind != PickleKind::kString) fail(std::string("storage key is ") + a_pickle_kind(a[2].kind));
    if (a[3].kind != PickleKind::kString) fail(std::string("storage location is ") + a_pickle_kind(a[3].kind));
    if (!is_int(a[4]) || a[4].integer < 0) fail("storage size is not a non-negative int");
    StorageRef s;
    s.key = a[2].text;
    s.dtype = *dtype;
    s.location = a[3].text;
    s.numel = a[4].integer;
    PickleValue v;
    v.kind = PickleKind::kStorage;
    v.index = graph_.storages.size();
    graph_.storages.push_back(std::move(s));
    return v;
  }

  // ---- one opcode ----

  void step() {
    namespace op = pickle_op;
    switch (op_) {
      case op::kProto: {
        const unsigned protocol = *take(1);
        if (protocol > kHighestProtocol) fail("unsupported pickle protocol " + std::to_string(protocol));
        return;
      }
      case op::kFrame: read_unsigned(8); return;  // framing only groups reads

      case op::kMark: marks_.push_back(stack_.size()); return;
      case op::kPop: pop(); return;
      case op::kPopMark: pop_to_mark(); return;
      case op::kDup: push(top()); return;

      case op::kBinPut: memo_[read_unsigned(1)] = top(); return;
      case op::kLongBinPut: memo_[read_unsigned(4)] = top(); return;
      case op::kMemoize: memo_[memo_.size()] = top(); return;
      case op::kBinGet: get(read_unsigned(1)); return;
      case op::kLongBinGet: get(read_unsigned(4)); return;

      case op::kNone: push(scalar(PickleKind::kNone)); return;
      case op::kNewTrue: push(scalar(PickleKind::kBool, 1)); return;
      case op::kNewFalse: push(scalar(PickleKind::kBool, 0)); return;
      case op::kBinInt: push(scalar(PickleKind::kInt, static_cast<std::int32_t>(read_unsigned(4)))); return;
      case op::kBinInt1: push(scalar(PickleKind::kInt, static_cast<std::int64_t>(read_unsigned(1)))); return;
      case op::kBinInt2: push(scalar(PickleKind::kInt, static_cast<std::int64_t>(read_unsigned(2)))); return;
      case op::kLong1: {
        const std::size_t bytes = *take(1);
        push(scalar(PickleKind::kInt, read_long(bytes)));
        return;
      }
      case op::kBinFloat: {
        const std::uint8_t* p = take(8);
        std::uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];  // big-endian, unlike the integers
        PickleValue v = scalar(PickleKind::kFloat);
        v.real = std::bit_cast<double>(bits);
        push(std::move(v));
        return;
      }

      case op::kShortBinUnicode:
      case op::kShortBinString:
      case op::kShortBinBytes: push(text(PickleKind::kString, read_string(read_unsigned(1)))); return;
      case op::kBinUnicode:
      case op::kBinString:
      case op::kBinBytes: push(text(PickleKind::kString, read_string(read_unsigned(4)))); return;
      case op::kBinUnicode8: push(text(PickleKind::kString, read_string(read_unsigned(8)))); return;

      case op::kEmptyTuple: push(container(PickleKind::kTuple)); return;
      case op::kTuple: push(container(PickleKind::kTuple, pop_to_mark())); return;
      case op::kTuple1:
      case op::kTuple2:
      case op::kTuple3: {
        const std::size_t n = op_ - op::kTuple1 + 1;
        std::vector<PickleValue> items(n);
        for (std::size_t i = n; i-- > 0;) items[i] = pop();
        push(container(PickleKind::kTuple, std::move(items)));
        return;
      }
      case op::kEmptyList: push(container(PickleKind::kList)); return;
      case op::kAppend: {
        PickleValue v = pop();
        std::vector<PickleValue> one;
        one.push_back(std::move(v));
        append(top(), std::move(one));
        return;
      }
      case op::kAppends: {
        std::vector<PickleValue> items = pop_to_mark();
        append(top(), std::move(items));
        return;
      }
      case op::kEmptyDict: push(container(PickleKind::kDict)); return;
      case op::kSetItem: {
        PickleValue value = pop();
        PickleValue key = pop();
        set_item(top(), std::move(key), std::move(value));
        return;
      }
      case op::kSetItems: {
        std::vector<PickleValue> items = pop_to_mark();
        if (items.size() % 2 != 0) fail("SETITEMS with an odd number of items");
        PickleValue& target = top();
        for (std::size_t i = 0; i < items.size(); i += 2) {
          set_item(target, std::move(items[i]), std::move(items[i + 1]));
        }
        return;
      }

      case op::kGlobal: {
        std::string module = read_line();
        std::string name = read_line();
        push(text(PickleKind::kGlobal, module + "." + name));
        return;
      }
      case op::kStackGlobal: {
        PickleValue name = pop();
        PickleValue module = pop();
        if (name.kind != PickleKind::kString || module.kind != PickleKind::kString) {
          fail("STACK_GLOBAL operands are not strings");
        }
        push(text(PickleKind::kGlobal, module.text + "." + name.text));
        return;
      }
      case op::kReduce:
      case op::kNewObj: {
        PickleValue args = pop();
        PickleValue callable = pop();
        push(call(callable, args));
        return;
      }
      case op::kBuild: {
        pop();  // the state
        const PickleValue& target = top();
        // An OrderedDict's state is the state dict's `_metadata` (per-module
        // versions); an opaque object's state is not modelled either.
        if (target.kind != PickleKind::kDict && target.kind != PickleKind::kObject) {
          fail(std::string("BUILD on ") + a_pickle_kind(target.kind));
        }
        return;
      }
      case op::kBinPersId: {
        PickleValue pid = pop();
        push(persistent_load(pid));
        return;
      }
      default: {
        char op[8];
        std::snprintf(op, sizeof op, "0x%02x", op_);
        fail_at(op_offset_, std::string("unsupported pickle opcode ") + op);
      }
    }
  }

  void get(std::uint64_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
    push(it->second);
  }

  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  std::size_t op_offset_ = 0;
  std::uint8_t op_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, PickleValue> memo_;
  PickleGraph graph_;
};

}  // namespace

PickleGraph read_pickle(const std::uint8_t* data, std::size_t size) { return Unpickler(data, size).run(); }

}  // namespace dtrain::vision::torch_save
