#pragma once

#include <exception>
#include <functional>
#include <string>

namespace dtrain::testing {

// The message of the exception `fn` throws, or "(no error)" when it throws none: for tests
// that check what an error says on every rank without leaving a rank behind.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace dtrain::testing
