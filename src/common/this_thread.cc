#include "common/this_thread.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kolo {

void name_this_thread(const std::string& name) { pthread_setname_np(pthread_self(), name.substr(0, 15).c_str()); }

Status set_this_thread_nice(int nice) {
  if (nice < 0 || nice > 19) {
    return Status::InvalidArgument("thread nice value " + std::to_string(nice) + " is not in 0-19");
  }
  // On Linux a nice value belongs to a thread (its kernel task), not to the whole process.
  const id_t tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int current = getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && current >= nice) return Status::OK();  // as low already (`nice python ...`): never raised
  if (setpriority(PRIO_PROCESS, tid, nice) != 0) {
    return Status::Internal(std::string("setpriority(") + std::to_string(nice) + ") failed: " + std::strerror(errno));
  }
  return Status::OK();
}

void tighten_this_thread_timers() {
  constexpr unsigned long kSlackNanoseconds = 1000;
  prctl(PR_SET_TIMERSLACK, kSlackNanoseconds, 0, 0, 0);
}

}  // namespace kolo
