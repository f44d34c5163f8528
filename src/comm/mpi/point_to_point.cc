#include "comm/mpi/point_to_point.h"

namespace kolo {

Status send_bytes(MPI_Comm comm, int peer, int tag, const char* data, size_t bytes, const char* what,
                  WaitPace pace, PeerBell* bell) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, &req), what);
  if (bell != nullptr) bell->ring_if_asleep(peer);
  return mpi_wait(&req, what, pace, bell, peer);
}

Status receive_bytes(MPI_Comm comm, int peer, int tag, char* data, size_t bytes, const char* what, WaitPace pace,
                     PeerBell* bell) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, &req), what);
  return mpi_wait(&req, what, pace, bell, peer);
}

Status send_receive_bytes(MPI_Comm comm, int left, int right, int tag, const char* out, size_t out_bytes, char* in,
                          size_t in_bytes, const char* what, WaitPace pace, PeerBell* bell) {
  MPI_Request recv = MPI_REQUEST_NULL, sent = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(in, static_cast<int>(in_bytes), MPI_BYTE, left, tag, comm, &recv), what);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(out, static_cast<int>(out_bytes), MPI_BYTE, right, tag, comm, &sent), what);
  if (bell != nullptr) {
    int here = 0;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Test(&recv, &here, MPI_STATUS_IGNORE), what);
    if (here) bell->ring_if_asleep(right);
  }
  Status s = mpi_wait(&recv, what, pace, bell, left);
  if (!s.ok()) return s;
  return mpi_wait(&sent, what, pace, bell, right);
}

}  // namespace kolo
