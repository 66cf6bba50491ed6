// LibTorch's errors (c10::Error) carry a C++ backtrace and sometimes several
// lines; a CheckpointError wants one line.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace dtrain::vision::torch_save {

// The first line of the exception's message, without LibTorch's backtrace.
inline std::string torch_error_message(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string s = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (const auto eol = s.find('\n'); eol != std::string::npos) s.resize(eol);
  return s;
}

}  // namespace dtrain::vision::torch_save
