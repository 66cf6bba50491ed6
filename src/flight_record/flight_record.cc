#include "flight_record/flight_record.h"

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

namespace dtrain::flight_record {
namespace {

using nlohmann::json;

constexpr CollectiveState kStates[] = {CollectiveState::kSubmitted, CollectiveState::kStarted,
                                       CollectiveState::kFinished, CollectiveState::kFailed};

CollectiveState state_from(const std::string& text) {
  for (CollectiveState state : kStates) {
    if (text == to_string(state)) return state;
  }
  throw std::invalid_argument("flight record: unknown collective state '" + text + "'");
}

[[noreturn]] void wrong_kind(const char* key, const char* where) {
  throw std::invalid_argument(std::string("flight record: ") + where + "'s '" + key + "' is of the wrong kind");
}

// Integers must be JSON integers: nlohmann converts a floating-point number to an integer
// type with a plain cast, undefined beyond the type's range (1e300 as a sequence number).
template <typename T>
T value_of(const json& value, const char* key, const char* where) {
  if constexpr (std::is_integral_v<T>) {
    if (!value.is_number_integer()) wrong_kind(key, where);
  }
  try {
    return value.get<T>();
  } catch (const json::exception&) {
    wrong_kind(key, where);
  }
}

const json& member(const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end()) throw std::invalid_argument(std::string("flight record: ") + where + " has no '" + key + "'");
  return *it;
}

template <typename T>
T field(const json& object, const char* key, const char* where) {
  return value_of<T>(member(object, key, where), key, where);
}

std::vector<std::int64_t> integers(const json& object, const char* key, const char* where) {
  const json& list = member(object, key, where);
  if (!list.is_array()) wrong_kind(key, where);
  std::vector<std::int64_t> values;
  for (const json& value : list) values.push_back(value_of<std::int64_t>(value, key, where));
  return values;
}

json collective_json(const CollectiveRecord& c) {
  return {{"seq", c.sequence},
          {"name", c.name},
          {"op", c.operation},
          {"shape", c.shape},
          {"dtype", c.dtype},
          {"device", c.device},
          {"process_set", c.process_set},
          {"state", to_string(c.state)},
          {"submitted_us", c.submitted_us},
          {"started_us", c.started_us},
          {"finished_us", c.finished_us}};
}

CollectiveRecord collective_from(const json& j) {
  if (!j.is_object()) throw std::invalid_argument("flight record: a collective is not an object");
  CollectiveRecord c;
  c.sequence = field<std::uint64_t>(j, "seq", "a collective");
  c.name = field<std::string>(j, "name", "a collective");
  c.operation = field<std::string>(j, "op", "a collective");
  c.shape = integers(j, "shape", "a collective");
  c.dtype = field<std::string>(j, "dtype", "a collective");
  c.device = field<std::string>(j, "device", "a collective");
  c.process_set = field<std::string>(j, "process_set", "a collective");
  c.state = state_from(field<std::string>(j, "state", "a collective"));
  c.submitted_us = field<std::int64_t>(j, "submitted_us", "a collective");
  c.started_us = field<std::int64_t>(j, "started_us", "a collective");
  c.finished_us = field<std::int64_t>(j, "finished_us", "a collective");
  return c;
}

}  // namespace

const char* to_string(CollectiveState state) {
  switch (state) {
    case CollectiveState::kSubmitted: return "submitted";
    case CollectiveState::kStarted: return "started";
    case CollectiveState::kFinished: return "finished";
    case CollectiveState::kFailed: return "failed";
  }
  return "?";
}

bool in_flight(const CollectiveRecord& collective) {
  return collective.state == CollectiveState::kSubmitted || collective.state == CollectiveState::kStarted;
}

std::string to_json(const RankRecord& record) {
  json collectives = json::array();
  for (const CollectiveRecord& c : record.collectives) collectives.push_back(collective_json(c));
  const json j = {{"rank", record.rank},
                  {"size", record.size},
                  {"host", record.host},
                  {"pid", record.pid},
                  {"reason", record.reason},
                  {"written_us", record.written_us},
                  {"collectives", std::move(collectives)}};
  // Invalid UTF-8 in a tensor name is replaced, never a reason to lose the record.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RankRecord parse_rank_record(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::invalid_argument(std::string("flight record: not JSON (") + e.what() + ")");
  }
  if (!j.is_object()) throw std::invalid_argument("flight record: not a JSON object");
  RankRecord record;
  record.rank = field<int>(j, "rank", "the record");
  record.size = field<int>(j, "size", "the record");
  record.host = field<std::string>(j, "host", "the record");
  record.pid = field<std::int64_t>(j, "pid", "the record");
  record.reason = field<std::string>(j, "reason", "the record");
  record.written_us = field<std::int64_t>(j, "written_us", "the record");
  const auto collectives = j.find("collectives");
  if (collectives == j.end() || !collectives->is_array()) {
    throw std::invalid_argument("flight record: the record has no 'collectives' list");
  }
  for (const json& c : *collectives) record.collectives.push_back(collective_from(c));
  if (record.size < 1 || record.size > kMostRanks || record.rank < 0 || record.rank >= record.size) {
    throw std::invalid_argument("flight record: rank " + std::to_string(record.rank) + " is outside a world of " +
                                std::to_string(record.size));
  }
  return record;
}

}  // namespace dtrain::flight_record
