#include "runtime/message.h"

#include <cctype>
#include <sstream>
#include <type_traits>

#include "runtime/message_codec.h"
#include "runtime/message_fields.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

const char* to_string(OpType type) {
  switch (type) {
    case OpType::kAllreduce: return "allreduce";
    case OpType::kAllgather: return "allgather";
    case OpType::kBroadcast: return "broadcast";
    case OpType::kAlltoall: return "alltoall";
    case OpType::kReducescatter: return "reducescatter";
    case OpType::kBarrier: return "barrier";
    case OpType::kJoin: return "join";
  }
  return "unknown";
}

std::string activity_name(OpType type) {
  std::string name = to_string(type);
  for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

bool Request::same_parameters(const Request& other) const {
  bool same = true;
  for_each_field<Request>([&](const auto& field) {
    if constexpr (std::is_same_v<typename std::decay_t<decltype(field)>::Value, std::int32_t>) {
      if (field.member == &Request::rank) return;
    }
    same = same && this->*field.member == other.*field.member;
  });
  return same;
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

namespace {

template <typename T>
std::string value_text(const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "\"" + value + "\"";
  } else if constexpr (kIsVector<T>) {
    std::string text = "[";
    for (std::size_t i = 0; i < value.size(); ++i) text += (i ? ", " : "") + value_text(value[i]);
    return text + "]";
  } else if constexpr (std::is_enum_v<T>) {
    return to_string(value);
  } else {
    std::ostringstream out;
    out << value;
    return out.str();
  }
}

template <typename Message>
std::string describe_message(const Message& message) {
  std::string text;
  for_each_field<Message>([&](const auto& field) {
    text += (text.empty() ? "" : " ") + std::string(field.name) + "=" + value_text(message.*field.member);
  });
  return text;
}

}  // namespace

std::vector<char> encode(const CycleReport& report) {
  WireWriter w;
  put_message(w, report);
  return w.take();
}

CycleReport decode_report(const std::vector<char>& bytes) {
  WireReader rd(bytes);
  return get_message<CycleReport>(rd);
}

std::vector<char> encode(const CyclePlan& plan) {
  WireWriter w;
  put_message(w, plan);
  return w.take();
}

CyclePlan decode_plan(const std::vector<char>& bytes) {
  WireReader rd(bytes);
  return get_message<CyclePlan>(rd);
}

std::string describe(const Request& request) { return describe_message(request); }
std::string describe(const Response& response) { return describe_message(response); }

}  // namespace dtrain::runtime
