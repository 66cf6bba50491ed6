#pragma once

// std::mutex and its locks as Clang's thread-safety analysis sees them (thread_annotations.h):
// libstdc++'s own types carry no annotations, so members guarded by a std::mutex would go
// unchecked. Mutex is a std::mutex; MutexLock holds one for a scope and may let it go and
// take it again (around a condition variable's wait, or work done unlocked), which is why
// condition variables here are std::condition_variable_any: it waits on any lock.
#include <condition_variable>
#include <mutex>

#include "concurrency/thread_annotations.h"

namespace dtrain::concurrency {

class DTRAIN_CAPABILITY("mutex") Mutex {
 public:
  void lock() DTRAIN_ACQUIRE() { mutex_.lock(); }
  void unlock() DTRAIN_RELEASE() { mutex_.unlock(); }
  bool try_lock() DTRAIN_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  std::mutex mutex_;
};

class DTRAIN_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) DTRAIN_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  ~MutexLock() DTRAIN_RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // Gives the mutex back until lock(); a condition variable's wait calls both.
  void unlock() DTRAIN_RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  void lock() DTRAIN_ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

using ConditionVariable = std::condition_variable_any;

}  // namespace dtrain::concurrency
