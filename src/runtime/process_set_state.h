// What a dtrain::ProcessSet refers to: its members, this process's place among them and, on a
// member, the background loop that runs the set's collectives until the set ends (removed, or
// dtrain shut down). Copies of a ProcessSet share it, so a set removed through one copy is
// removed for all.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "concurrency/mutex.h"

namespace dtrain::runtime {
class BackgroundLoop;
}

namespace dtrain::detail {

struct ProcessSetState {
  std::string name;        // "1", "2", ... (add_process_set) or the key (connect_process_set)
  std::vector<int> ranks;  // the members' job ranks, ascending
  int job_rank = 0;        // this process's rank in the job
  int rank = -1;           // this process's place in `ranks`; -1 when not a member

  concurrency::Mutex mutex;
  std::shared_ptr<runtime::BackgroundLoop> loop DTRAIN_GUARDED_BY(mutex);  // a member's, until the set ends
  std::string ended DTRAIN_GUARDED_BY(mutex);                              // why it ended; empty while usable
};

}  // namespace dtrain::detail
