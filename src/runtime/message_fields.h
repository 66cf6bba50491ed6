// The fields of each control message, listed once. The encoder and decoder (message.cc,
// cycle_summary.cc), Request::same_parameters and describe() all walk these tables, so a
// field added to a message and to its table is carried, compared and printed everywhere;
// tests/runtime/message_fields_test.cc fails when a struct has a member its table lacks.
// A table's order is the order on the wire.
#pragma once

#include <tuple>

#include "runtime/cycle_summary.h"
#include "runtime/message.h"

namespace dtrain::runtime {

template <typename Message, typename T>
struct Field {
  using Value = T;
  const char* name;
  T Message::*member;
};

template <typename Message, typename T>
constexpr Field<Message, T> field(const char* name, T Message::*member) {
  return {name, member};
}

template <typename Message>
struct MessageFields;  // ::list: a tuple of Field

template <>
struct MessageFields<Request> {
  static constexpr auto list = std::tuple{field("rank", &Request::rank),
                                          field("type", &Request::type),
                                          field("name", &Request::name),
                                          field("dtype", &Request::dtype),
                                          field("device", &Request::device),
                                          field("shape", &Request::shape),
                                          field("reduce_op", &Request::reduce_op),
                                          field("root", &Request::root),
                                          field("prescale", &Request::prescale),
                                          field("postscale", &Request::postscale),
                                          field("splits", &Request::splits),
                                          field("group", &Request::group),
                                          field("group_size", &Request::group_size)};
};

template <>
struct MessageFields<Response> {
  static constexpr auto list = std::tuple{field("type", &Response::type),
                                          field("names", &Response::names),
                                          field("error", &Response::error),
                                          field("dtype", &Response::dtype),
                                          field("device", &Response::device),
                                          field("reduce_op", &Response::reduce_op),
                                          field("prescale", &Response::prescale),
                                          field("postscale", &Response::postscale),
                                          field("root", &Response::root),
                                          field("shape", &Response::shape),
                                          field("group", &Response::group),
                                          field("group_size", &Response::group_size),
                                          field("world_size", &Response::world_size),
                                          field("sizes", &Response::sizes),
                                          field("joined_ranks", &Response::joined_ranks),
                                          field("last_joined", &Response::last_joined)};
};

template <>
struct MessageFields<CycleReport> {
  static constexpr auto list =
      std::tuple{field("shutdown", &CycleReport::shutdown), field("cache_bits", &CycleReport::cache_bits),
                 field("requests", &CycleReport::requests)};
};

// An item's response is on the wire only when it is not a cache position (message.cc).
template <>
struct MessageFields<CyclePlan::Item> {
  static constexpr auto list = std::tuple{field("cache_position", &CyclePlan::Item::cache_position),
                                          field("response", &CyclePlan::Item::response)};
};

template <>
struct MessageFields<CyclePlan> {
  static constexpr auto list =
      std::tuple{field("shutdown", &CyclePlan::shutdown), field("shutdown_reason", &CyclePlan::shutdown_reason),
                 field("items", &CyclePlan::items), field("fusion_threshold_bytes", &CyclePlan::fusion_threshold_bytes),
                 field("cycle_time_ms", &CyclePlan::cycle_time_ms)};
};

// Its encoder writes these in place for speed (cycle_summary.cc); the decoder walks them.
template <>
struct MessageFields<CycleSummary> {
  static constexpr auto list = std::tuple{field("needs_coordinator", &CycleSummary::needs_coordinator),
                                          field("cache_bits", &CycleSummary::cache_bits)};
};

// Calls visit(field) for each field of Message, in wire order.
template <typename Message, typename Visit>
constexpr void for_each_field(Visit&& visit) {
  std::apply([&](const auto&... fields) { (visit(fields), ...); }, MessageFields<Message>::list);
}

template <typename Message>
constexpr std::size_t field_count() {
  return std::tuple_size_v<decltype(MessageFields<Message>::list)>;
}

}  // namespace dtrain::runtime
