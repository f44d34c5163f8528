// Sleeping on a word of a shared mapping until a process that maps it too changes it: Linux futexes of
// the shared kind (keyed by the word's page, not by this process's address for it).
#pragma once

#include <chrono>
#include <cstdint>

namespace kolo {

// Sleeps while the 32-bit word at `word` holds `expected`: until a wake on it, `timeout`, or a signal,
// whichever comes first. Returns at once where the word already holds something else.
void shared_futex_wait(const void* word, uint32_t expected, std::chrono::microseconds timeout);

// Wakes every thread asleep on `word`, in any process.
void shared_futex_wake(const void* word);

}  // namespace kolo
