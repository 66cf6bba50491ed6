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
// Keys match [A-Za-z0-9._/:-]+. Values live in memory for the launch's lifetime.
#pragma once

namespace dtrain::rendezvous {

inline constexpr const char* kTokenHeader = "X-Dtrain-Token";
inline constexpr const char* kBadTokenBody = "dtrain rendezvous: bad or missing job token";
// Raised whenever a request or an answer of the store changes meaning.
inline constexpr int kProtocolVersion = 1;
inline constexpr const char* kVersionHeader = "X-Dtrain-Rendezvous-Version";
inline constexpr int kOtherVersionStatus = 409;
inline constexpr const char* kKeyPath = "/v1/kv/";       // followed by the key
inline constexpr const char* kReadyPath = "/v1/ready/";  // followed by the rank

}  // namespace dtrain::rendezvous
