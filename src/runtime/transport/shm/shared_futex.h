// Sleeping on a 32-bit counter in memory shared between the processes of a host, for the
// shared-memory paths' waits: spin while the peer is about to answer, sleep when it is not,
// so a rank waiting for a busy or descheduled peer gives its core back.
//
// The protocol (both sides seq_cst, so either the sleeper sees the new value or the writer
// sees the sleeper): the writer stores the counter, then wakes if `sleepers` is non-zero; the
// waiter counts itself in `sleepers`, re-reads the counter, and sleeps only on the value it
// read (the kernel re-checks it), with a time limit so it can look for a dead peer.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

namespace dtrain::runtime {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));

// Sleeps while `word` holds `seen`, at most `limit` (or until woken, or spuriously). Plain
// (not process-private) futex operations: the word is shared between processes.
inline void shared_futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t seen, std::chrono::milliseconds limit) {
  const auto ns = std::chrono::nanoseconds(limit).count();
  timespec timeout{static_cast<std::time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

inline void shared_futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The writer's half: publish `value`, wake whoever sleeps on it.
inline void publish_and_wake(std::atomic<std::uint32_t>& word, std::atomic<std::uint32_t>& sleepers,
                             std::uint32_t value) {
  word.store(value, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst) > 0) shared_futex_wake_all(word);
}

// The waiter's half, one sleep: returns after `word` changed from what `done` last saw, after
// a wake, or after `limit`; the caller re-checks `done` and its peer. `done` reads the state
// the word announces.
template <typename Done>
void sleep_unless(std::atomic<std::uint32_t>& word, std::atomic<std::uint32_t>& sleepers, Done done,
                  std::chrono::milliseconds limit) {
  sleepers.fetch_add(1, std::memory_order_seq_cst);
  const std::uint32_t seen = word.load(std::memory_order_seq_cst);
  if (!done()) shared_futex_wait(word, seen, limit);
  sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace dtrain::runtime
