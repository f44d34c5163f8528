#include "comm/mpi/host_shm.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {

Status MpiShmWaitPolicy::interrupted() {
  Status s = mpi_waits_given_up("shared-memory collective");
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
  give_up_mpi_waits(lost.message());
  return lost;
}

size_t slot_bytes_for(int ranks) {
  constexpr size_t kMost = 1 << 20, kLeast = 64 << 10, kSegment = 16 << 20;
  const size_t fair = kSegment / (2 * static_cast<size_t>(ranks)) / 4096 * 4096;
  return std::max(kLeast, std::min(kMost, fair));
}

void MpiShmWaitPolicy::progress() {
  // The hierarchical allreduce's crossing is in flight while the host's stages run here: without MPI
  // calls on this thread its pieces would wait for the next MPI wait.
  if (crossing_ != MPI_COMM_NULL) drive_mpi_progress(crossing_);
}

std::unique_ptr<HostShm> HostShm::open(MPI_Comm local, MPI_Comm crossing, const HostShmOptions& options,
                                       std::vector<std::string> names, std::string* why_not) {
  int rank = 0, size = 1;
  MPI_Comm_rank(local, &rank);
  MPI_Comm_size(local, &size);
  if (!options.enabled) {
    *why_not = "KOLO_SHARED_MEMORY=0";
    return nullptr;
  }
  if (size == 1) {
    *why_not = "one rank on the host";
    return nullptr;
  }
  const ShmLayout layout(size, options.slot_bytes > 0 ? options.slot_bytes : slot_bytes_for(size));
  // Local rank 0 makes the segment and tells the others its path (empty: it could not).
  std::unique_ptr<SharedSegment> segment;
  char path[512] = {0};
  std::string failure;
  if (rank == 0) {
    remove_orphaned_segments(options.dir);
    Status s = SharedSegment::create(options.dir, layout.bytes(), &segment);
    if (s.ok()) {
      std::strncpy(path, segment->path().c_str(), sizeof(path) - 1);
    } else {
      failure = s.message();
    }
  }
  int ok = MPI_Bcast(path, sizeof(path), MPI_CHAR, 0, local) == MPI_SUCCESS && path[0] != 0 ? 1 : 0;
  if (ok && rank != 0) {
    Status s = SharedSegment::attach(path, layout.bytes(), &segment);
    if (!s.ok()) {
      ok = 0;
      failure = s.message();
    }
  }
  auto memory = std::unique_ptr<HostShm>(new HostShm());
  memory->policy_ = std::make_unique<MpiShmWaitPolicy>(std::move(names), local, crossing);
  if (ok) {
    memory->group_ = std::make_unique<ShmGroup>(std::move(segment), layout, rank, memory->policy_.get());
    memory->group_->publish_pid();
  }
  // Every rank mapped it, and wrote its pid, or none uses it.
  if (MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, local) != MPI_SUCCESS) ok = 0;
  if (!ok) {
    *why_not = failure.empty() ? "a rank of the host could not map the segment" : failure;
    return nullptr;
  }
  // Mapped everywhere: the name can go, so nothing is left behind however the job ends.
  memory->group_->segment().unlink();
  memory->group_->start_watching();
  return memory;
}

}  // namespace kolo
