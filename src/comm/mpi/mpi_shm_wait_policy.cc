#include "comm/mpi/mpi_shm_wait_policy.h"

#include <chrono>
#include <thread>

#include "comm/give_up.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {

Status MpiShmWaitPolicy::interrupted() {
  Status s = waits_given_up("shared-memory collective");
  if (!s.ok()) return s;
  if (peer_failure_pending()) {
    return Status::PeersFailed(std::string("shared-memory collective ended: a peer failed (") + kPeersFailedWords + ")");
  }
  if (surviving_peer_failures()) return probe_for_failures();
  return Status::OK();
}

Status MpiShmWaitPolicy::probe_for_failures() {
  // A frozen peer never ends, so only ULFM's detector finds it; it declares the failure to MPI's calls
  // alone, and a wait on shared memory makes none. A receive from any source fails once it has.
  const auto now = std::chrono::steady_clock::now();
  if (now < next_probe_) return Status::OK();
  next_probe_ = now + std::chrono::milliseconds(2);
  return failure_mpi_declared("shared-memory collective");
}

Status MpiShmWaitPolicy::failure_mpi_declared(const std::string& what) {
  int flag = 0;
  const int rc = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, local_, &flag, MPI_STATUS_IGNORE);
  return is_peer_failure(rc) ? mpi_status(rc, what) : Status::OK();
}

Status MpiShmWaitPolicy::peer_ended(int peer, pid_t pid) {
  const std::string what = "shared-memory collective: " + names_[static_cast<size_t>(peer)] + " (pid " +
                           std::to_string(pid) + ", on this host) ended in the middle of it";
  if (surviving_peer_failures()) {
    // In place, the survivors' recovery (MPIX_Comm_shrink and the GPU communicators' shrink) needs ULFM
    // to know the peer failed: a process seen ending here is reported once MPI says so too (a receive
    // from any source fails while a failure is not acknowledged), or after a bound, whichever is first.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until && !peer_failure_pending()) {
      Status declared = failure_mpi_declared(what);
      if (!declared.ok()) return declared;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    report_peer_failure(what);
    return Status::PeersFailed(what + " (" + kPeersFailedWords + ")");
  }
  // The job ends: kolo's MPI waits (its shutdown's among them) give up now rather than after the peer timeout.
  const Status lost = Status::Aborted(what + "; the job must end");
  give_up_waits(lost.message());
  return lost;
}

void MpiShmWaitPolicy::progress() {
  // The hierarchical allreduce's crossing is in flight while the host's stages run here: without MPI
  // calls on this thread its pieces would wait for the next MPI wait.
  if (crossing_ != MPI_COMM_NULL) drive_mpi_progress(crossing_);
}

}  // namespace kolo
