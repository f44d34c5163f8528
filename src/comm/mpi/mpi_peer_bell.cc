#include "comm/mpi/mpi_peer_bell.h"

#include <vector>

#include "comm/mpi/mpi_status.h"
#include "comm/socket/udp_doorbell.h"
#include "common/logging.h"

namespace kolo {

Status open_peer_bell(MPI_Comm comm, std::unique_ptr<PeerBell>* out) {
  out->reset();
  int size = 0, rank = 0;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  std::unique_ptr<UdpDoorbell> bell;
  const Status opened = UdpDoorbell::open(&bell);
  if (!opened.ok()) KOLO_LOG(kWarning, "waits across hosts nap without a doorbell: " << opened.message());
  const UdpDoorbell::Address mine = bell ? bell->address() : UdpDoorbell::Address{};
  std::vector<UdpDoorbell::Address> all(static_cast<size_t>(size));
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm, &req),
                           "doorbell addresses MPI_Iallgather");
  const Status s = mpi_wait(&req, "doorbell addresses MPI_Iallgather");
  if (!s.ok()) return s;
  if (bell) {
    bell->set_peers(all, rank);
    *out = std::move(bell);
  }
  return Status::OK();
}

}  // namespace kolo
