// The TCP mesh's framing (runtime/transport/tcp/tcp_mesh.h) reading a peer's bytes: an 8-byte
// length and the message, again and again, until the peer closes the connection. The first
// byte of the input says what this rank expects at each step (bit k for step k mod 8: a
// message of any length, or one of exactly the second byte's length); the rest is what the
// peer sent. Every input must end in the mesh's own errors (a wrong length, the peer gone),
// never in an allocation the bytes that arrived do not back, and a message of any length that
// is taken must be exactly the bytes sent.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "runtime/transport/tcp/tcp_mesh.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::uint8_t any_length_steps = data[0];
  const std::size_t exact_length = data[1];
  const std::uint8_t* stream = data + 2;

  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, ends) != 0) __builtin_trap();
  // The peer sends what the socket pair's buffer holds (hundreds of KiB) and closes: reading
  // past it is a lost peer, not a wait.
  const ssize_t written = size > 2 ? ::write(ends[1], stream, size - 2) : 0;
  if (written < 0) __builtin_trap();
  const auto stream_bytes = static_cast<std::size_t>(written);
  ::close(ends[1]);

  auto mesh = dtrain::runtime::TcpMesh::over(0, {-1, ends[0]}, "rank", std::chrono::seconds(5));
  std::vector<char> any_length;
  std::vector<char> exact(exact_length);
  std::size_t consumed = 0;  // bytes of the stream the steps taken so far account for
  dtrain::fuzz::expect_clean_errors([&] {
    for (int step = 0;; ++step) {
      dtrain::runtime::TcpMesh::Receive receive{.peer = 1};
      const bool takes_any_length = (any_length_steps >> (step % 8)) & 1;
      if (takes_any_length) {
        receive.resizable = &any_length;
      } else {
        receive.data = exact.data();
        receive.bytes = exact.size();
      }
      mesh->step({}, {&receive, 1});
      const std::size_t length = takes_any_length ? any_length.size() : exact.size();
      if (consumed + 8 + length > stream_bytes) __builtin_trap();  // more than was sent
      const char* sent = reinterpret_cast<const char*>(stream) + consumed + 8;
      const char* taken = takes_any_length ? any_length.data() : exact.data();
      if (length > 0 && std::memcmp(taken, sent, length) != 0) __builtin_trap();
      consumed += 8 + length;
    }
  });
  return 0;
}
