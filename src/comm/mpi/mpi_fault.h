// Surviving a lost peer in place with ULFM (Open MPI 5 started with `mpirun --with-ft ulfm`): every
// communicator kolo makes is tracked here; the first failure reported (comm/peer_failure.h) revokes
// them all, so that every survivor's pending calls return (MPIX_ERR_REVOKED) instead of waiting on
// the lost rank, and the ops fail with kPeersFailed. The survivors then shrink the job's
// communicator (an agreement among them) and kolo starts again over it. Without ULFM (Debian's Open
// MPI 4.1) nothing here is active and a lost peer ends the job, as before.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "comm/peer_failure.h"
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

// Makes the first failure reported (comm/peer_failure.h) revoke every tracked communicator.
void revoke_tracked_comms_on_failure();
// The survivors of `comm` (revoked), agreed among them: MPIX_Comm_shrink. Collective over them.
Status shrink_survivors(MPI_Comm comm, MPI_Comm* survivors);
// The bitwise AND of every live rank's `bits`, the same on all of them even when a rank fails meanwhile
// (ULFM's MPIX_Comm_agree; MPI_Allreduce without ULFM). False where a rank failed: each survivor then
// holds the same, partial AND. A plain allreduce that fails on some ranks leaves the others inside it.
bool agree_and(MPI_Comm comm, int* bits);
// One turn of MPI's progress on `comm`, for a survivor waiting on something else (a GPU library) during
// a recovery: ULFM's failure detector hears only from processes that make MPI calls (its heartbeats go
// with MPI's progress), and would otherwise take a waiting survivor for lost.
void drive_mpi_progress(MPI_Comm comm);

}  // namespace kolo
