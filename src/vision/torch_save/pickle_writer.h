// Emits pickle protocol 2 opcodes, the protocol torch.save uses by default,
// so that Python's unpickler (and read_pickle) can load what is written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtrain::vision::torch_save {

class PickleWriter {
 public:
  PickleWriter();  // writes PROTO 2

  // A class or function, memoized: the first use writes GLOBAL and stores it
  // in the memo, later uses fetch it, as Python's pickler does.
  void global(const std::string& module, const std::string& name);
  void string(const std::string& utf8);
  void integer(std::int64_t value);  // the shortest of BININT1, BININT2, BININT, LONG1
  void boolean(bool value);
  void mark();
  void tuple_from_mark();
  void int_tuple(const std::vector<std::int64_t>& values);
  void empty_tuple();
  void reduce();         // callable, args → callable(*args)
  void persistent_id();  // pid → persistent_load(pid)
  void set_items();      // dict, mark, k, v, ... → dict with the pairs added
  // Ends the pickle and returns its bytes; the writer is spent.
  std::string finish();

 private:
  void op(std::uint8_t code) { out_.push_back(static_cast<char>(code)); }
  void little_endian(std::uint64_t value, int bytes);

  std::string out_;
  std::map<std::string, std::uint32_t> memo_;  // "module\nname" → memo index
};

}  // namespace dtrain::vision::torch_save
