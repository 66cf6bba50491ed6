// gRPC stays initialised from the first parameter-server client or server to the process's
// exit. gRPC counts its users (grpc_init / grpc_shutdown); when the count falls to zero on one
// of its own threads (a push's completion releasing the last channel, for one), it frees its
// globals from a detached thread of its own, which then races the process's exit: a worker
// that returns from main right after its last push could crash at exit ("attempting
// double-free" under AddressSanitizer, docs/hardening.md). Holding one count for the process
// keeps that cleanup from ever starting; what gRPC holds is released by the exit itself.
#pragma once

namespace dtrain::ps {

// Idempotent and thread-safe; each client and server calls it before it makes a channel.
void hold_grpc_until_exit();

}  // namespace dtrain::ps
