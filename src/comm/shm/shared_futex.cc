#include "comm/shm/shared_futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace kolo {

void shared_futex_wait(const void* word, uint32_t expected, std::chrono::microseconds timeout) {
  const long long us = timeout.count();
  timespec ts{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
  // Not FUTEX_PRIVATE_FLAG: the sleeper and the waker are different processes.
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void shared_futex_wake(const void* word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace kolo
