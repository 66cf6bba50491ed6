// What every fuzz target shares: libFuzzer's entry point, and the rule a decoder of outside
// bytes is held to. Bad input may end in the decoder's own error (a clear message for the
// user); it must never crash, hang, read or write out of bounds, or allocate without bound.
// std::bad_alloc and std::length_error are therefore not "clean" errors: they mean a size
// read off the input reached the allocator unchecked, and they end the run like a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace dtrain::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Runs `decode`; its errors count as handled, except those that signal an unbounded allocation.
template <typename Decode>
void expect_clean_errors(Decode&& decode) {
  try {
    decode();
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::length_error&) {
    throw;
  } catch (const std::exception&) {}
}

}  // namespace dtrain::fuzz
