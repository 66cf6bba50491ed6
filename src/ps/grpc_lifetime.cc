#include "ps/grpc_lifetime.h"

#include <grpc/grpc.h>

#include <mutex>

namespace dtrain::ps {

void hold_grpc_until_exit() {
  static std::once_flag held;
  std::call_once(held, [] { grpc_init(); });  // never matched by grpc_shutdown(): see the header
}

}  // namespace dtrain::ps
