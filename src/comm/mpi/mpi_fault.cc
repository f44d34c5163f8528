#include "comm/mpi/mpi_fault.h"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // ULFM's MPIX_* where the MPI has them
#endif

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace kolo {
namespace {

// kolo's communicators, revoked together when a peer fails.
struct Tracked {
  std::mutex mu;
  std::vector<MPI_Comm> comms;
};

Tracked& tracked() {
  static Tracked* t = new Tracked();  // never destroyed: engine threads may report at exit
  return *t;
}

}  // namespace

bool ulfm_built() {
#if defined(MPIX_ERR_PROC_FAILED)
  return true;
#else
  return false;
#endif
}

bool ulfm_enabled() {
#if defined(MPIX_ERR_PROC_FAILED) && defined(MPIX_FT)
  int* value = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &flag);
  return flag && value != nullptr && *value != 0;
#else
  return false;
#endif
}

bool transports_survive_failures(std::string* why_not) {
  const char* btl = std::getenv("OMPI_MCA_btl");
  std::string list = btl == nullptr ? "" : btl;
  bool ok = !list.empty() && list[0] != '^';
  for (size_t start = 0; ok && start <= list.size();) {
    const size_t end = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, end - start);
    ok = name == "tcp" || name == "self";
    start = end + 1;
  }
  if (!ok && why_not != nullptr) {
    *why_not = "Open MPI's transports here (btl " + (list.empty() ? std::string("default, with shared memory") : list) +
               ") do not survive a lost peer; start the job with --mca btl tcp,self";
  }
  return ok;
}

bool is_peer_failure(int rc) {
#if defined(MPIX_ERR_PROC_FAILED)
  if (rc == MPI_SUCCESS) return false;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
#else
  (void)rc;
  return false;
#endif
}

void track_comm(MPI_Comm comm) {
  if (!ulfm_built() || comm == MPI_COMM_NULL) return;
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mu);
  t.comms.push_back(comm);
}

void untrack_comm(MPI_Comm comm) {
  if (!ulfm_built()) return;
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mu);
  t.comms.erase(std::remove(t.comms.begin(), t.comms.end(), comm), t.comms.end());
}

bool comm_revoked(MPI_Comm comm) {
#if defined(MPIX_ERR_PROC_FAILED)
  int revoked = 0;
  return comm != MPI_COMM_NULL && MPIX_Comm_is_revoked(comm, &revoked) == MPI_SUCCESS && revoked;
#else
  (void)comm;
  return false;
#endif
}

void release_comm(MPI_Comm* comm) {
  if (*comm == MPI_COMM_NULL) return;
  untrack_comm(*comm);
  if (comm_revoked(*comm)) {
    *comm = MPI_COMM_NULL;
    return;
  }
  MPI_Comm_free(comm);
}

void revoke_tracked_comms_on_failure() {
  set_peer_failure_revoker([] {
#if defined(MPIX_ERR_PROC_FAILED)
    // Every survivor's calls on these return now, wherever they wait (negotiation, data, a host's or the
    // hosts' communicator, the peer watch): none is left waiting on the lost rank.
    Tracked& t = tracked();
    std::lock_guard<std::mutex> lock(t.mu);
    for (MPI_Comm c : t.comms) MPIX_Comm_revoke(c);
#endif
  });
}

bool agree_and(MPI_Comm comm, int* bits) {
#if defined(MPIX_ERR_PROC_FAILED)
  if (ulfm_enabled()) return MPIX_Comm_agree(comm, bits) == MPI_SUCCESS;
#endif
  int all = 0;
  const bool ok = MPI_Allreduce(bits, &all, 1, MPI_INT, MPI_BAND, comm) == MPI_SUCCESS;
  *bits = ok ? all : 0;
  return ok;
}

Status shrink_survivors(MPI_Comm comm, MPI_Comm* survivors) {
#if defined(MPIX_ERR_PROC_FAILED)
  const int rc = MPIX_Comm_shrink(comm, survivors);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {0};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return Status::Internal("MPIX_Comm_shrink failed: " + std::string(text, static_cast<size_t>(len)));
  }
  MPI_Comm_set_errhandler(*survivors, MPI_ERRORS_RETURN);
  return Status::OK();
#else
  (void)comm;
  (void)survivors;
  return Status::Unsupported("this MPI has no ULFM (MPIX_Comm_shrink): a lost peer ends the job");
#endif
}

void drive_mpi_progress(MPI_Comm comm) {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE);
}

}  // namespace kolo
