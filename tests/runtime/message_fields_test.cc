// The control messages' field tables (runtime/message_fields.h) against the structs: every
// member is in its table, every field survives the wire, and equality and printing see
// every field. A member added to a struct but not to its table fails here.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/cycle_summary.h"
#include "runtime/message.h"
#include "runtime/message_fields.h"

namespace dtrain::runtime {
namespace {

// Converts to anything: counts the members of an aggregate by how many of these
// initialize it.
struct AnyValue {
  template <typename T>
  operator T() const;  // never called: only in unevaluated initializers
};

template <typename T, typename... Values>
constexpr std::size_t member_count() {
  if constexpr (requires { T{Values{}..., AnyValue{}}; }) {
    return member_count<T, Values..., AnyValue>();
  } else {
    return sizeof...(Values);
  }
}

static_assert(member_count<Request>() == field_count<Request>(), "a Request member is missing from its table");
static_assert(member_count<Response>() == field_count<Response>(), "a Response member is missing from its table");
static_assert(member_count<CycleReport>() == field_count<CycleReport>(), "a CycleReport member is not in its table");
static_assert(member_count<CyclePlan>() == field_count<CyclePlan>(), "a CyclePlan member is not in its table");
static_assert(member_count<CyclePlan::Item>() == field_count<CyclePlan::Item>(), "a plan item member is missing");
static_assert(member_count<CycleSummary>() == field_count<CycleSummary>(), "a CycleSummary member is missing");

template <typename T>
inline constexpr bool kVector = false;
template <typename T>
inline constexpr bool kVector<std::vector<T>> = true;

template <typename Message>
Message filled(int seed);

// A value unlike the member's default, different for each seed.
template <typename T>
T distinct(int seed) {
  if constexpr (std::is_same_v<T, bool>) {
    return true;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(1);  // every enum of the messages has a second value
  } else if constexpr (std::is_arithmetic_v<T>) {
    return static_cast<T>(seed + 7);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "value " + std::to_string(seed);
  } else if constexpr (kVector<T>) {
    return T{distinct<typename T::value_type>(seed), distinct<typename T::value_type>(seed + 1)};
  } else {
    return filled<T>(seed);
  }
}

template <typename Message>
Message filled(int seed) {
  Message message;
  int next = seed;
  for_each_field<Message>([&](const auto& field) {
    using Value = typename std::decay_t<decltype(field)>::Value;
    message.*field.member = distinct<Value>(next++);
  });
  if constexpr (std::is_same_v<Message, CyclePlan::Item>) {
    message.cache_position = -1;  // an item with a position carries no response
  }
  return message;
}

// Names the fields in which a and b differ, or nothing.
template <typename Message>
std::string differing_fields(const Message& a, const Message& b) {
  std::string names;
  for_each_field<Message>([&](const auto& field) {
    using Value = typename std::decay_t<decltype(field)>::Value;
    if constexpr (requires { MessageFields<Value>::list; }) {
      if (!differing_fields(a.*field.member, b.*field.member).empty()) names += std::string(field.name) + " ";
    } else if constexpr (kVector<Value> && requires { MessageFields<typename Value::value_type>::list; }) {
      const auto& x = a.*field.member;
      const auto& y = b.*field.member;
      bool same = x.size() == y.size();
      for (std::size_t i = 0; same && i < x.size(); ++i) same = differing_fields(x[i], y[i]).empty();
      if (!same) names += std::string(field.name) + " ";
    } else if (!(a.*field.member == b.*field.member)) {
      names += std::string(field.name) + " ";
    }
  });
  return names;
}

std::size_t words(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += c == ' ';
  return n;
}

TEST(MessageFields, FilledMessagesDifferFromDefaultsInEveryField) {
  // Otherwise the round trips below could pass with a field left out.
  EXPECT_EQ(words(differing_fields(filled<Request>(1), Request{})), field_count<Request>());
  EXPECT_EQ(words(differing_fields(filled<Response>(1), Response{})), field_count<Response>());
  EXPECT_EQ(words(differing_fields(filled<CyclePlan>(1), CyclePlan{})), field_count<CyclePlan>());
  EXPECT_EQ(words(differing_fields(filled<CycleReport>(1), CycleReport{})), field_count<CycleReport>());
  EXPECT_EQ(words(differing_fields(filled<CycleSummary>(1), CycleSummary{})), field_count<CycleSummary>());
}

TEST(MessageFields, EveryFieldOfAReportSurvivesTheWire) {
  CycleReport report = filled<CycleReport>(3);
  const CycleReport back = decode_report(encode(report));
  EXPECT_EQ(differing_fields(report, back), "");
  EXPECT_EQ(back.requests.size(), 2u);
}

TEST(MessageFields, EveryFieldOfAPlanSurvivesTheWire) {
  CyclePlan plan = filled<CyclePlan>(5);
  const CyclePlan back = decode_plan(encode(plan));
  EXPECT_EQ(differing_fields(plan, back), "");
  // A cached item carries its position only.
  plan.items[1].cache_position = 4;
  const CyclePlan cached = decode_plan(encode(plan));
  EXPECT_EQ(cached.items[1].cache_position, 4);
  EXPECT_EQ(differing_fields(cached.items[1].response, Response{}), "");
}

TEST(MessageFields, EveryFieldOfASummarySurvivesTheWire) {
  const CycleSummary summary = filled<CycleSummary>(9);
  EXPECT_EQ(differing_fields(summary, decode_summary(encode(summary, 4096))), "");
}

TEST(MessageFields, SameParametersSeesEveryFieldButTheRank) {
  const Request base = filled<Request>(11);
  for_each_field<Request>([&](const auto& field) {
    using Value = typename std::decay_t<decltype(field)>::Value;
    Request changed = base;
    changed.*field.member = distinct<Value>(100);
    if constexpr (std::is_same_v<Value, bool> || std::is_enum_v<Value>) {
      changed.*field.member = Value{};  // distinct() gives these one value only
    }
    const bool is_rank = std::string(field.name) == "rank";
    EXPECT_EQ(base.same_parameters(changed), is_rank) << "field " << field.name;
  });
}

TEST(MessageFields, DescribeNamesEveryField) {
  const std::string request = describe(filled<Request>(1));
  for_each_field<Request>([&](const auto& field) {
    EXPECT_NE(request.find(std::string(field.name) + "="), std::string::npos) << field.name << " in " << request;
  });
  const std::string response = describe(filled<Response>(1));
  for_each_field<Response>([&](const auto& field) {
    EXPECT_NE(response.find(std::string(field.name) + "="), std::string::npos) << field.name << " in " << response;
  });
  EXPECT_NE(request.find("name=\"value 3\""), std::string::npos) << request;
}

}  // namespace
}  // namespace dtrain::runtime
