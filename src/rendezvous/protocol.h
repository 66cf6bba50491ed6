// The protocol of the job's rendezvous store: `dtrain run` (or rank 0 of a Slurm step) serves
// it (rendezvous_server),
// ranks and parameter servers are its clients (rendezvous_client). Both sides use these names,
// so they cannot drift apart.
//
//   every request carries "X-Dtrain-Token: <job token>", else
//     403 "dtrain rendezvous: bad or missing job token"
//   and "X-Dtrain-Rendezvous-Version: <kProtocolVersion>", else 409 with the store's version
//     in the same header and a body naming both versions (a launcher and ranks built from
//     different dtrain commits)
//   PUT  /v1/kv/<key>     body = raw bytes          -> 200
//   GET  /v1/kv/<key>     -> 200 with the bytes, or 404 when absent (clients poll)
//   POST /v1/ready/<rank> -> 200, marks the rank as having reached rendezvous
//   POST /v1/wait?timeout_ms=<ms>  body = keys, one per line (rendezvous/key_batch.h)
//        -> 200 with every key's value once all exist (a rank reads all its peers' addresses
//           in one request, not one poll per peer), or, when kMaxWaitMs or `timeout_ms` passes
//           first, 404 with the missing keys, one per line (the client asks again)
// Keys match [A-Za-z0-9._/:-]+. Values live in memory for the launch's lifetime.
#pragma once

#include <cstddef>

namespace dtrain::rendezvous {

inline constexpr const char* kTokenHeader = "X-Dtrain-Token";
inline constexpr const char* kBadTokenBody = "dtrain rendezvous: bad or missing job token";
// Raised whenever a request or an answer of the store changes meaning.
// 2: the batched wait (POST /v1/wait).
inline constexpr int kProtocolVersion = 2;
inline constexpr const char* kVersionHeader = "X-Dtrain-Rendezvous-Version";
inline constexpr int kOtherVersionStatus = 409;
inline constexpr const char* kKeyPath = "/v1/kv/";       // followed by the key
inline constexpr const char* kReadyPath = "/v1/ready/";  // followed by the rank
inline constexpr const char* kWaitPath = "/v1/wait";
inline constexpr const char* kWaitTimeoutParam = "timeout_ms";
// The longest the store holds one wait before answering 404: well inside a client's read
// timeout, so a slow world is many short waits, never a broken connection.
inline constexpr int kMaxWaitMs = 10'000;
// The most keys one wait may name (a world of this many ranks reads all addresses at once).
inline constexpr std::size_t kMaxWaitKeys = 1 << 16;

}  // namespace dtrain::rendezvous
