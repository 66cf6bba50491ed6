// Writes and reads control messages field by field from their tables (message_fields.h) in
// WireWriter's encoding. Private to the runtime: message.cc and cycle_summary.cc use it.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/message_fields.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

template <typename T>
inline constexpr bool kIsVector = false;
template <typename T>
inline constexpr bool kIsVector<std::vector<T>> = true;

template <typename T>
inline constexpr bool kIsMessage = requires {
  MessageFields<T>::list;
};

template <typename Message>
void put_message(WireWriter& w, const Message& message);
template <typename Message>
Message get_message(WireReader& rd);

// One field's value: numbers and enums as their bytes, bool as one byte, strings and
// vectors with a 32-bit count first, messages field by field.
template <typename T>
void put_value(WireWriter& w, const T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    w.put<std::uint8_t>(value ? 1 : 0);
  } else if constexpr (std::is_same_v<T, std::string>) {
    w.put_string(value);
  } else if constexpr (kIsVector<T>) {
    if constexpr (std::is_trivially_copyable_v<typename T::value_type>) {
      w.put_vector(value);
    } else {
      w.put<std::uint32_t>(static_cast<std::uint32_t>(value.size()));
      for (const auto& element : value) put_value(w, element);
    }
  } else if constexpr (kIsMessage<T>) {
    put_message(w, value);
  } else {
    w.put(value);
  }
}

template <typename T>
void get_value(WireReader& rd, T& value) {
  if constexpr (std::is_same_v<T, bool>) {
    value = rd.get<std::uint8_t>() != 0;
  } else if constexpr (std::is_same_v<T, std::string>) {
    value = rd.get_string();
  } else if constexpr (kIsVector<T>) {
    if constexpr (std::is_trivially_copyable_v<typename T::value_type>) {
      value = rd.get_vector<typename T::value_type>();
    } else {
      const auto n = rd.get<std::uint32_t>();
      value.clear();
      for (std::uint32_t i = 0; i < n; ++i) get_value(rd, value.emplace_back());
    }
  } else if constexpr (kIsMessage<T>) {
    value = get_message<T>(rd);
  } else {
    value = rd.get<T>();
  }
}

template <typename Message>
void put_message(WireWriter& w, const Message& message) {
  for_each_field<Message>([&](const auto& field) { put_value(w, message.*field.member); });
}

template <typename Message>
Message get_message(WireReader& rd) {
  Message message;
  for_each_field<Message>([&](const auto& field) { get_value(rd, message.*field.member); });
  return message;
}

// A plan item that names a cache position carries no response.
template <>
inline void put_message(WireWriter& w, const CyclePlan::Item& item) {
  w.put(item.cache_position);
  if (item.cache_position < 0) put_value(w, item.response);
}

template <>
inline CyclePlan::Item get_message(WireReader& rd) {
  CyclePlan::Item item;
  item.cache_position = rd.get<std::int32_t>();
  if (item.cache_position < 0) get_value(rd, item.response);
  return item;
}

}  // namespace dtrain::runtime
