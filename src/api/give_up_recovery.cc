#include "api/give_up_recovery.h"

#include <unistd.h>

#include <cstdio>

namespace kolo {

void give_up_recovery(int rank, int size, double seconds) {
  char line[512];
  const int n = std::snprintf(line, sizeof line,
                              "kolo: rank %d of %d: the recovery in place has not finished within %g s (MPI has not "
                              "declared a lost peer failed: its host cut off, or ULFM's detector off?); exiting with "
                              "status 1 so that kolorun restarts the job from its last commit "
                              "(KOLO_RECOVERY_TIMEOUT_SECONDS)\n",
                              rank, size, seconds);
  const size_t length = n < 0 ? 0 : static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1;
  if (write(STDERR_FILENO, line, length) < 0) {
    // stderr gone: the status still says it
  }
  _exit(1);
}

}  // namespace kolo
