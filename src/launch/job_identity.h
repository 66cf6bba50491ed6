#pragma once

#include <string>

namespace dtrain::launch {

// Per-launch secrets and names, fresh from /dev/urandom on every launch.
// The token guards the rendezvous store; the job id tells jobs apart in logs.
struct JobIdentity {
  std::string token;   // 128 bits as 32 lowercase hex characters
  std::string job_id;  // 32 bits as 8 lowercase hex characters

  static JobIdentity generate();
};

// `bytes` random bytes from /dev/urandom as lowercase hex.
std::string random_hex(size_t bytes);

}  // namespace dtrain::launch
