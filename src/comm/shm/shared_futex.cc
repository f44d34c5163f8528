#include "comm/shm/shared_futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

#include "common/clock.h"

namespace kolo {

void shared_futex_wait(const void* word, uint32_t expected, std::chrono::microseconds timeout) {
  timespec ts = to_timespec(timeout);
  // Not FUTEX_PRIVATE_FLAG: the sleeper and the waker are different processes.
  syscall(SYS_futex, word, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void shared_futex_wake(const void* word) { syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0); }

}  // namespace kolo
