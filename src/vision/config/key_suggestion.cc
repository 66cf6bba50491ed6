#include "vision/config/key_suggestion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace dtrain::vision::config {

namespace {

char fold(char c) { return static_cast<char>(std::toupper(static_cast<unsigned char>(c))); }

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

std::string_view last_name(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

}  // namespace

std::optional<std::string> closest_key(std::string_view unknown, const std::vector<std::string>& known) {
  // A quarter of the key's length: NMS_THRESHOLD for NMS_THRESH in a
  // 24-character key, but not an unrelated key of similar length.
  const size_t tolerance = std::max<size_t>(2, unknown.size() / 4);
  std::optional<std::string> best;
  size_t best_distance = tolerance + 1;
  for (const std::string& key : known) {
    const size_t distance = edit_distance(unknown, key);
    if (distance < best_distance) {
      best = key;
      best_distance = distance;
    }
  }
  if (best) return best;

  std::optional<std::string> same_name;
  for (const std::string& key : known) {
    if (edit_distance(last_name(key), last_name(unknown)) != 0) continue;
    if (same_name) return std::nullopt;  // ambiguous: say nothing rather than guess
    same_name = key;
  }
  return same_name;
}

std::string unknown_key_message(std::string_view unknown, const std::vector<std::string>& known,
                                std::string_view where) {
  std::string message = fmt::format("unknown config key '{}'", unknown);
  if (!where.empty()) message += fmt::format(" in {}", where);
  if (const auto suggestion = closest_key(unknown, known)) {
    message += fmt::format(" (did you mean {}?)", *suggestion);
  }
  return message;
}

}  // namespace dtrain::vision::config
