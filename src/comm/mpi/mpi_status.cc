#include "comm/mpi/mpi_status.h"

#include "comm/give_up.h"
#include "comm/mpi/mpi_fault.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

namespace kolo {

Status mpi_status(int rc, const std::string& what) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  const std::string message = what + " failed: " + std::string(text, static_cast<size_t>(len));
  if (is_peer_failure(rc) && surviving_peer_failures()) {
    report_peer_failure(message);
    return Status::PeersFailed(message + " (" + kPeersFailedWords + ")");
  }
  return Status::Internal(message);
}

Status mpi_wait(MPI_Request* request, const char* what, WaitPace pace, PeerBell* bell, int peer) {
  using clock = std::chrono::steady_clock;
  // A peer that is on its way arrives within the spins and yields. One that is not (still
  // computing, or its engine asleep) may take milliseconds: naps then double up to the pace's
  // longest, so a long wait costs a few wakeups rather than thousands, each of which would preempt a
  // framework thread.
  constexpr int kSpins = 64;
  const bool transfer = pace == WaitPace::kTransfer;
  const auto yield_for = transfer ? std::chrono::microseconds(2000) : std::chrono::microseconds(50);
  const auto max_nap = transfer ? std::chrono::microseconds(100) : std::chrono::microseconds(1000);
  clock::time_point start;  // read once the spins are over: most waits end within them
  auto nap = std::chrono::microseconds(10);
  bool napping = false;
  for (int i = 0;; ++i) {
    int done = 0;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Test(request, &done, MPI_STATUS_IGNORE), what);
    if (done) return Status::OK();
    if (i < kSpins) continue;
    if (i == kSpins) start = clock::now();
    if (waits_are_given_up()) return waits_given_up(what);
    if (!napping && clock::now() - start < yield_for) {
      sched_yield();
      continue;
    }
    if (bell == nullptr) {
      std::this_thread::sleep_for(nap);
    } else if (!napping) {
      // The note goes before the test below: a peer that sends after that test finds the note and rings,
      // and the sleep sees the ring (a note still on its way when the peer looks costs a nap, short by then).
      bell->sleeping_on(peer);
      napping = true;
      continue;
    } else if (bell->sleep(nap)) {
      // The peer has sent: its message is on its way (a ring may overtake it).
      napping = false;
      start = clock::now();
      nap = std::chrono::microseconds(10);
      continue;
    }
    nap = std::min(nap * 2, max_nap);
  }
}

}  // namespace kolo
