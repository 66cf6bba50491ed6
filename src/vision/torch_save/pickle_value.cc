#include "vision/torch_save/pickle_value.h"

namespace dtrain::vision::torch_save {

const char* pickle_kind_name(PickleKind kind) {
  switch (kind) {
    case PickleKind::kNone: return "None";
    case PickleKind::kBool: return "bool";
    case PickleKind::kInt: return "int";
    case PickleKind::kFloat: return "float";
    case PickleKind::kString: return "str";
    case PickleKind::kGlobal: return "global";
    case PickleKind::kObject: return "object";
    case PickleKind::kTuple: return "tuple";
    case PickleKind::kList: return "list";
    case PickleKind::kDict: return "dict";
    case PickleKind::kStorage: return "storage";
    case PickleKind::kTensor: return "tensor";
  }
  return "value";
}

std::string a_pickle_kind(PickleKind kind) {
  const std::string name = pickle_kind_name(kind);
  if (kind == PickleKind::kNone) return name;
  return (name[0] == 'i' || name[0] == 'o' ? "an " : "a ") + name;
}

}  // namespace dtrain::vision::torch_save
