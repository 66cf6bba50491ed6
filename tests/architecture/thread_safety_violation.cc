// Must NOT compile under scripts/check-thread-safety: it reads a member guarded by a mutex
// without holding it. The script fails if clang accepts this file (the analysis is off).
#include "concurrency/mutex.h"

namespace {

struct Counter {
  dtrain::concurrency::Mutex mutex;
  int value DTRAIN_GUARDED_BY(mutex) = 0;
};

}  // namespace

int read_unlocked(Counter& counter) { return counter.value; }
