// Surviving a lost peer in place with ULFM (Open MPI 5 started with `mpirun --with-ft ulfm`): every
// communicator kolo makes is tracked here; the first MPI call that reports a failed peer revokes
// them all, so that every survivor's pending calls return (MPIX_ERR_REVOKED) instead of waiting on
// the lost rank, and the ops fail with kPeersFailed. The survivors then shrink the job's
// communicator (an agreement among them) and kolo starts again over it. Without ULFM (Debian's Open
// MPI 4.1) nothing here is active and a lost peer ends the job, as before.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>

#include "kolo/status.h"

namespace kolo {

// Whether the MPI kolo was built against has ULFM.
bool ulfm_built();
// Whether this job runs with ULFM's fault tolerance on (the MPIX_FT attribute of MPI_COMM_WORLD:
// `mpirun --with-ft ulfm`). MPI must be initialized.
bool ulfm_enabled();
// Whether Open MPI's transports survive a lost peer: ULFM's do (tcp, self), its shared-memory one
// does not (a shrink over it never returns). From OMPI_MCA_btl, which `mpirun --mca btl tcp,self` sets;
// `why_not` says what to change otherwise.
bool transports_survive_failures(std::string* why_not);
// In every kPeersFailed message, so that a framework that keeps only the message (TensorFlow turns its
// ops' errors into InternalError) still tells a roll-back from a failure.
constexpr const char* kPeersFailedWords = "a peer failed: the survivors roll back to their last commit";

// Whether an MPI return code says a peer failed, or a communicator was revoked because one did.
bool is_peer_failure(int rc);

// kolo's communicators, revoked together when a peer fails. Safe from any thread.
void track_comm(MPI_Comm comm);
void untrack_comm(MPI_Comm comm);
// Whether `comm` has been revoked (ULFM); false without ULFM.
bool comm_revoked(MPI_Comm comm);
// Frees `*comm` (untracked first) and sets it to MPI_COMM_NULL; a revoked one is left to MPI, not
// freed: Open MPI (5.0, ULFM) reuses a freed revoked communicator's id for the survivors' next one,
// whose creation then never completes. No-op on MPI_COMM_NULL.
void release_comm(MPI_Comm* comm);

// Called once per failure, after the revocation, on a thread of its own (the thread that saw the
// failure may hold the caller's locks): the runtime's, set when the job survives failures in place.
// Without one, a failed peer is an MPI error like any other.
void set_peer_failure_hook(std::function<void(const std::string& what)> hook);
bool surviving_peer_failures();
// Whether this process has survived a peer's failure in place (since it started).
bool outlived_a_peer();
// The failure a call reported: revokes every tracked communicator and calls the hook, the first
// time since the last recovery. `what` names the call.
void report_peer_failure(const std::string& what);
// The survivors of `comm` (revoked), agreed among them: MPIX_Comm_shrink. Collective over them.
Status shrink_survivors(MPI_Comm comm, MPI_Comm* survivors);
// The bitwise AND of every live rank's `bits`, the same on all of them even when a rank fails meanwhile
// (ULFM's MPIX_Comm_agree; MPI_Allreduce without ULFM). False where a rank failed: each survivor then
// holds the same, partial AND. A plain allreduce that fails on some ranks leaves the others inside it.
bool agree_and(MPI_Comm comm, int* bits);
// Waits until the hook of every failure reported so far has returned (before recovering from it).
void wait_for_failure_hooks();
// After a recovery: the next failure is reported again.
void rearm_peer_failure();
// Whether a failure has been reported and not yet recovered from: cheap, for waits outside MPI (kolo's
// shared memory) that must end as MPI's calls on the revoked communicators do.
bool peer_failure_pending();
// How many failures have been reported since the process started: a wait that began before a report
// can tell that one came, recovered from or not.
uint64_t peer_failures_reported();
// One turn of MPI's progress on `comm`, for a survivor waiting on something else (a GPU library) during
// a recovery: ULFM's failure detector hears only from processes that make MPI calls (its heartbeats go
// with MPI's progress), and would otherwise take a waiting survivor for lost.
void drive_mpi_progress(MPI_Comm comm);

}  // namespace kolo
