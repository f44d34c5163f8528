#include "comm/mpi/mpi_status.h"

#include <sched.h>

#include <chrono>
#include <thread>

namespace kolo {

Status mpi_status(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return Status::Internal(what + " failed: " + std::string(text, static_cast<size_t>(len)));
}

Status mpi_wait(MPI_Request* request, const char* what) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  for (int i = 0;; ++i) {
    int done = 0;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Test(request, &done, MPI_STATUS_IGNORE), what);
    if (done) return Status::OK();
    if (i < 64) continue;
    const auto waited = clock::now() - start;
    if (waited < std::chrono::microseconds(200)) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(waited < std::chrono::milliseconds(5) ? 20 : 200));
    }
  }
}

}  // namespace kolo
